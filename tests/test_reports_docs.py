"""The compare run the README names and docs/reports.md shows is what the command prints; the example and the
screenshot script run."""

import os
import re
import struct

import pytest

from tests.cli_runs import cli, python
from tests.conftest import EXAMPLES, ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
REPORTS_DOC = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")


def plain_env():
    return {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "NO_COLOR")}


def test_the_compare_run_is_what_the_cli_prints():
    command = re.search(r"^(answer-eval compare examples/data/\S+ examples/data/\S+ --show 2)$", README, flags=re.M)[1]
    assert f"`{command}`" in REPORTS_DOC  # the page shows the README's run
    block = re.search(r"```text\n(answer-eval compare: .*?)```", REPORTS_DOC, flags=re.S)[1]
    done = cli(*command.split()[1:], cwd=ROOT, env=plain_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(block)


def png_size(path):
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_the_reports_page_shows_the_report_screenshot_made_by_the_script():
    assert "](report.png)" in REPORTS_DOC
    shot = ROOT / "docs" / "report.png"
    assert png_size(shot) == (1280, 1900)
    assert shot.stat().st_size < 600_000


@pytest.mark.slow
def test_screenshot_script_renders_the_report(tmp_path):
    out, html = tmp_path / "report.png", tmp_path / "report.html"
    done = python(
        ROOT / "scripts" / "report_screenshot.py", "--output", out, "--html", html, "--no-semantic", "--height", 900,
        cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert png_size(out) == (1280, 900)
    assert "InstructGPT on 301 Natural Questions" in html.read_text(encoding="utf-8")


def test_compare_systems_example_prints_haystacks_reports():
    done = python(EXAMPLES / "compare_systems.py", "--limit", "20", "--rows", "3", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for title in (
        "aggregated_report: zero-shot",
        "aggregated_report: few-shot",
        "detailed_report: zero-shot",
        "comparative_detailed_report: zero-shot against few-shot",
    ):
        assert title in out
    for metric in ("exact_match_first_gold", "sas_first_gold", "answer_contains", "answer_judge"):
        assert f"  {metric}  " in out
        assert f"zero-shot_{metric}" in out
        assert f"few-shot_{metric}" in out
    assert "left out" not in out


@pytest.mark.slow
def test_coverage_screenshot_script_renders_the_section_shown_in_the_docs(tmp_path):
    assert "![The agreement-coverage section of the report on NQ301 dev" in REPORTS_DOC
    assert "](report-coverage.png)" in REPORTS_DOC
    shipped = ROOT / "docs" / "report-coverage.png"
    assert png_size(shipped)[0] > 600
    assert shipped.stat().st_size < 300_000
    out, html = tmp_path / "coverage.png", tmp_path / "coverage.html"
    done = python(ROOT / "scripts" / "coverage_screenshot.py", "--output", out, "--html", html, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert png_size(out) == png_size(shipped)
    page = html.read_text(encoding="utf-8")
    assert page.count('<g class="mark" data-kind="in_sample">') == 1
    assert "0.745 keeps 77.4% at 0.879, bound 0.850" in REPORTS_DOC
    row = (
        '<td class="num">0.745</td><td class="num">622</td><td class="num">77.4%</td><td class="num">0.879</td>'
        '<td class="num">0.850</td>'
    )
    assert row in page
    assert '<td class="num">0.95</td><td class="num">228</td>' in page
    assert '<td class="num">0.943</td><td class="num">not tested</td>' in page  # above the first start
