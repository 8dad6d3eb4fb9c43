"""Reports: the scorers compared side by side, the report's data, its charts and its HTML page."""
