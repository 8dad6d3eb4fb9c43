"""Screenshot the report's agreement-coverage section on NQ301 dev for docs/reports.md.

Judges data/judge/nq301-dev.jsonl (804 human-judged answers) with `answer-eval judge --output`,
runs `answer-eval report` on the judged file with `--target-agreement 0.85` (an in-sample mark),
opens the page in Debian's headless Chromium (as scripts/report_screenshot.py does) and saves the
"Agreement and coverage" section as a PNG.

Run: python scripts/coverage_screenshot.py [--output docs/report-coverage.png] [--html coverage.html]
Needs the test dependency group (playwright) and the chromium package (`make test` installs both).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from report_screenshot import ROOT, chromium

LABELLED = ROOT / "data" / "judge" / "nq301-dev.jsonl"


def main() -> int:
    """Write the judged file, the report and the section's screenshot; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(ROOT / "docs" / "report-coverage.png"), help="the PNG to write")
    parser.add_argument("--html", help="also keep the HTML report here")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from answer_eval.cli.main import main as answer_eval

    with tempfile.TemporaryDirectory() as work:
        judged = Path(work) / "nq301-dev-judged.jsonl"
        code = answer_eval(["judge", str(LABELLED), "--no-progress", "--output", str(judged)])
        if code != 0:
            return code
        html = Path(args.html) if args.html else Path(work) / "coverage.html"
        command = ["report", str(judged), "--html", str(html), "-e", "judge", "--target-agreement", "0.85"]
        code = answer_eval([*command, "--no-semantic", "--no-progress"])
        if code != 0:
            return code
        with chromium(Path(work) / "profile", 1000, 900) as context:
            page = context.new_page()
            page.goto(html.resolve().as_uri())
            page.locator("#coverage").screenshot(path=args.output)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
