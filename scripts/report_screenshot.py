"""Render the HTML report of the two bundled InstructGPT runs and screenshot it for docs/reports.md.

Runs `answer-eval report` on examples/data/nq301_davinci_zeroshot.jsonl and nq301_davinci_fewshot.jsonl,
opens the page in Debian's headless Chromium (/usr/bin/chromium, driven by playwright: no browser is
downloaded) and saves the top of the page as a PNG.

Run: python scripts/report_screenshot.py [--output docs/report.png] [--html report.html] [--no-semantic]
Needs the test dependency group (playwright) and the chromium package (`make test` installs both).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "data"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def chromium(profile: Path, width: int, height: int) -> Iterator[BrowserContext]:
    """Debian's headless Chromium driven by playwright (no browser downloaded), its user data in ``profile``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,  # playwright passes --headless
            args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height},
        )
        yield context
        context.close()


def main() -> int:
    """Write the report and its screenshot; return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(ROOT / "docs" / "report.png"), help="the PNG to write")
    parser.add_argument("--html", help="also keep the HTML report here")
    parser.add_argument("--no-semantic", action="store_true", help="load no model (the judge's lexical stages)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1900)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from answer_eval.cli.main import main as answer_eval

    with tempfile.TemporaryDirectory() as work:
        html = Path(args.html) if args.html else Path(work) / "report.html"
        command = [
            "report",
            os.path.relpath(DATA / "nq301_davinci_zeroshot.jsonl"),
            os.path.relpath(DATA / "nq301_davinci_fewshot.jsonl"),
            "--html",
            str(html),
            "--title",
            "InstructGPT on 301 Natural Questions: zero-shot against few-shot",
            *("-e", "contains", "-e", "exact", "-e", "judge", "-e", "rouge"),
            "--no-progress",
            *(["--no-semantic"] if args.no_semantic else []),
        ]
        code = answer_eval(command)
        if code != 0:
            return code
        with chromium(Path(work) / "profile", args.width, args.height) as context:
            page = context.new_page()
            page.goto(html.resolve().as_uri())
            page.screenshot(path=args.output, full_page=False)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
