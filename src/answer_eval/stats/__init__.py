"""Statistics: intervals, paired tests, exact sums, agreement and kappa, comparing systems."""
