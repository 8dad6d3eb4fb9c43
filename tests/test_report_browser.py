"""The HTML report in a real headless Chromium (Debian's /usr/bin/chromium, driven by playwright, no download).

`make test` installs the chromium package when it is missing.
"""

import json
import sys

import pytest

from tests.cli_runs import cli
from tests.conftest import EXAMPLES, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from report_screenshot import chromium  # scripts/ is not a package

ZERO = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl"
FEW = EXAMPLES / "data" / "nq301_davinci_fewshot.jsonl"
EVALUATORS = ("contains", "exact", "judge", "rouge")

# One worker, one report: it lasts the session, as xdist may run other modules' tests between two of this
# one's (a module fixture would then be made again). The browser lasts the module: Playwright's sync API
# holds an event loop in the thread while it runs, which other modules' asyncio.run() would meet.
pytestmark = pytest.mark.xdist_group("browser")


def make_report(html, *arguments, evaluators=EVALUATORS):
    flags = [arg for name in evaluators for arg in ("-e", name)]
    done = cli("report", *arguments, "--html", html, "--no-semantic", *flags, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh user-data dir
    with chromium(profile, 1280, 900) as context:
        yield context


@pytest.fixture(scope="session")
def report(tmp_path_factory):
    html = tmp_path_factory.mktemp("report") / "report.html"
    summary = make_report(html, ZERO, FEW)
    return html, summary


def open_page(browser, html):
    page = browser.new_page()
    problems = []
    page.on("console", lambda message: problems.append(message.text) if message.type in ("error", "warning") else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on(
        "request", lambda request: problems.append(f"request {request.url}") if request.url != html.as_uri() else None
    )
    page.goto(html.as_uri())
    return page, problems


def visible_rows(page):
    return page.locator("#items-table tbody tr:not([hidden])")


def test_charts_and_table_render_without_console_errors(browser, report, tmp_path):
    html, summary = report
    page, problems = open_page(browser, html)
    assert page.locator("svg.interval-chart circle").count() == len(EVALUATORS) * 2
    assert page.locator("svg.failure-chart g.segment").count() == sum(
        len(system["failure_counts"]) for system in summary["systems"]
    )
    assert page.locator("svg.heat-map g.cell").count() == 2 * len(EVALUATORS) ** 2
    chart = page.locator("svg.failure-chart").first.bounding_box()
    assert chart["width"] > 300
    assert chart["height"] > 50
    assert page.locator("#items-table tbody tr").count() == 602
    assert visible_rows(page).count() == 602
    assert page.locator("#shown-count").inner_text() == "602 of 602 rows shown"
    headers = page.locator("#items-table thead th").all_inner_texts()
    assert [h.strip() for h in headers[:5]] == ["system", "line", "question", "gold", "prediction"]
    page.screenshot(path=tmp_path / "report.png", full_page=False)
    assert (tmp_path / "report.png").stat().st_size > 20_000
    assert problems == []
    page.close()


def test_search_filters_the_rows(browser, report):
    html, _ = report
    page, problems = open_page(browser, html)
    page.fill("#search", "DEPECHE mode")
    rows = visible_rows(page)
    assert rows.count() == 2  # the question, once per system
    assert all("depeche mode" in text.lower() for text in rows.all_inner_texts())
    assert page.locator("#shown-count").inner_text() == "2 of 602 rows shown"
    page.fill("#search", "")
    page.select_option("#system-filter", "nq301_davinci_fewshot")
    assert visible_rows(page).count() == 301
    page.check("#disagree-filter")
    expected = page.locator('#items-table tbody tr[data-system="nq301_davinci_fewshot"][data-disagree="1"]').count()
    assert 0 < expected < 301
    assert visible_rows(page).count() == expected
    assert problems == []
    page.close()


def column_values(page, index):
    return page.locator(f"#items-table tbody tr td:nth-child({index})").evaluate_all(
        "cells => cells.map(cell => cell.dataset.sort ?? cell.textContent)"
    )


def test_headers_sort_the_rows(browser, report):
    html, _ = report
    page, problems = open_page(browser, html)
    headers = page.locator("#items-table thead th")
    names = [text.strip() for text in headers.all_inner_texts()]
    rouge = names.index("rouge") + 1
    headers.nth(rouge - 1).locator("button").click()
    values = [float(v) for v in column_values(page, rouge)]
    assert values == sorted(values)
    assert headers.nth(rouge - 1).get_attribute("aria-sort") == "ascending"
    headers.nth(rouge - 1).locator("button").click()
    values = [float(v) for v in column_values(page, rouge)]
    assert values == sorted(values, reverse=True)
    assert values[0] > values[-1]
    line = names.index("line") + 1
    headers.nth(line - 1).locator("button").click()
    lines = [int(v) for v in column_values(page, line)]
    assert lines == sorted(lines)
    assert headers.nth(rouge - 1).get_attribute("aria-sort") is None
    question = names.index("question") + 1
    headers.nth(question - 1).locator("button").click()
    texts = page.locator(f"#items-table tbody tr td:nth-child({question})").all_inner_texts()
    collated = page.evaluate(
        "texts => [...texts].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()))", texts
    )
    assert texts == collated
    assert problems == []
    page.close()


def test_hostile_text_stays_text_in_the_browser(browser, tmp_path):
    hostile = '<img src=x onerror="window.pwned = 1"><script>window.pwned = 2</script>'
    data = tmp_path / "hostile.jsonl"
    rows = [
        {"question": hostile, "answers": ["x"], "prediction": hostile},
        {"question": "q", "answers": ["a"], "prediction": "a"},
    ]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    html = tmp_path / "hostile.html"
    make_report(html, data, evaluators=("contains",))
    page, problems = open_page(browser, html)
    assert page.evaluate("window.pwned") is None
    assert page.locator("#items-table img, #items-table script").count() == 0
    assert hostile in page.locator("#items-table tbody tr").first.inner_text()
    assert problems == []
    page.close()


def test_agreement_coverage_chart_renders_with_its_mark(browser, tmp_path):
    labelled = ROOT / "data" / "judge" / "nq301-dev.jsonl"
    judged = tmp_path / "judged.jsonl"
    done = cli("judge", labelled, "--output", judged)
    assert done.returncode == 0, done.stderr
    html = tmp_path / "coverage.html"
    summary = make_report(html, judged, "--target-agreement", "0.85", evaluators=("judge",))
    (mark,) = summary["systems"][0]["coverage"]["marks"]
    page, problems = open_page(browser, html)
    chart = page.locator("#coverage svg.coverage-chart")
    assert chart.count() == 1
    box = chart.bounding_box()
    assert box["width"] > 500
    assert box["height"] > 250
    curve = page.locator("#coverage path.agreement").bounding_box()
    assert curve["width"] > 300  # from the few most confident verdicts to all of them
    dot = page.locator('#coverage g.mark[data-kind="in_sample"] circle').bounding_box()
    assert box["x"] < dot["x"] < box["x"] + box["width"]
    assert "in-sample: chosen on the same labels it is drawn on" in page.locator("#coverage").inner_text()
    assert f"{mark['threshold']:.4g}" in page.locator("#coverage table.coverage").inner_text()
    assert problems == []
    page.close()
