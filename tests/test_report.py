"""`answer-eval report`: what the HTML page holds, that it is self-contained and escaped, results files reused."""

import json
import re

import pytest
from scipy import stats as scipy_stats

from answer_eval import AnswerContainsScorer
from answer_eval.errors import count_failures
from tests.cli_runs import cli, write_jsonl
from tests.conftest import EXAMPLES

ZERO = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl"
FEW = EXAMPLES / "data" / "nq301_davinci_fewshot.jsonl"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


def rows_of(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    html = tmp_path_factory.mktemp("report") / "report.html"
    done = cli(
        "report", ZERO, FEW, "--html", html, "--no-semantic", "-e", "contains", "-e", "exact", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    return html, html.read_text(encoding="utf-8"), json.loads(done.stdout)


def test_report_scores_and_failure_kinds(bundled):
    _, page, summary = bundled
    scorer = AnswerContainsScorer()
    for system, path in zip(summary["systems"], (ZERO, FEW), strict=True):
        verdicts = [scorer.score(r["prediction"], r["answers"]) for r in rows_of(path)]
        right = sum(v.correct for v in verdicts)
        score = system["scores"]["contains"]
        assert score["score"] == pytest.approx(right / len(verdicts))
        reference = scipy_stats.binomtest(right, len(verdicts)).proportion_ci(method="wilson")
        assert score["interval"] == pytest.approx([reference.low, reference.high])
        expected = {
            "correct": right,
            **{k: v for k, v in count_failures(v.failure_kind for v in verdicts).items() if v},
        }
        assert system["failure_counts"] == expected
        assert f'data-kind="wrong"><title>{system["name"]}: wrong {expected["wrong"]} of 301' in page
    assert [d["evaluator"] for d in summary["differences"]] == ["contains", "exact"]
    assert summary["systems"][0]["agreement"]["names"] == ["contains", "exact"]


def test_report_page_has_every_part(bundled):
    _, page, _ = bundled
    for part in ('id="systems"', 'id="scores"', 'id="differences"', 'id="failures"', 'id="agreement"', 'id="items"'):
        assert part in page
    assert page.count('class="chart ') == 1 + 1 + 2  # intervals, failure kinds, one heat map per system
    assert page.count("<tr data-system=") == 602
    assert page.count('<input id="search"') == 1


def test_report_is_self_contained(bundled):
    _, page, _ = bundled
    assert not re.search(r"\ssrc\s*=", page)  # no external (or any) script or image source
    assert re.findall(r"href=\"([^\"]*)\"", page) == ["data:,"]
    assert "url(" not in page
    assert "@import" not in page
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}  # a namespace, not a fetch
    assert "Content-Security-Policy" in page
    assert "default-src 'none'" in page


def test_user_text_is_escaped_never_markup(tmp_path):
    rows = [
        {"question": HOSTILE, "answers": [HOSTILE], "prediction": HOSTILE},
        {"question": "</td></tr></table><h1>x</h1>", "answers": ["a&b"], "prediction": '"><svg onload=alert(1)>'},
    ]
    data = write_jsonl(tmp_path / 'sys<b>"x.jsonl', rows)
    html = tmp_path / "report.html"
    done = cli("report", data, "--html", html, "--no-semantic", "-e", "contains")
    assert done.returncode == 0, done.stderr
    page = html.read_text(encoding="utf-8")
    assert "window.pwned" in page
    assert "<script>window.pwned" not in page
    assert "<img" not in page
    assert "<h1>x</h1>" not in page
    assert "<svg onload" not in page
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in page
    assert "sys&lt;b&gt;&quot;x" in page
    assert page.count("<script>") == 1  # the page's own script only


def test_results_file_verdicts_are_reused(tmp_path):
    scored = tmp_path / "scored.jsonl"
    done = cli("score", ZERO, "--output", scored)
    assert done.returncode == 0, done.stderr
    rows = rows_of(scored)
    flipped = next(i for i, row in enumerate(rows) if not row["correct"])
    rows[flipped]["correct"] = True  # a verdict only the file holds: the report must show it, not rescore
    rows[flipped]["failure_kind"] = None
    write_jsonl(scored, rows)
    html = tmp_path / "report.html"
    done = cli("report", scored, "--html", html, "--no-semantic", "-e", "contains", "--format", "json")
    assert done.returncode == 0, done.stderr
    system = json.loads(done.stdout)["systems"][0]
    assert system["reused"] == ["contains"]
    assert system["scores"]["contains"]["score"] == pytest.approx(sum(r["correct"] for r in rows) / len(rows))
    assert system["failure_counts"]["correct"] == sum(r["correct"] for r in rows)


def test_judge_results_are_reused_with_their_evidence(tmp_path):
    judged = tmp_path / "judged.jsonl"
    done = cli("judge", write_jsonl(tmp_path / "in.jsonl", rows_of(ZERO)[:25]), "--output", judged)
    assert done.returncode == 0, done.stderr
    html = tmp_path / "report.html"
    done = cli("report", judged, "--html", html, "--no-semantic", "-e", "judge", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["systems"][0]["reused"] == ["judge"]
    page = html.read_text(encoding="utf-8")
    first = rows_of(judged)[0]["evidence"]
    assert first.replace('"', "&quot;") in page


def test_files_with_other_questions_get_a_note_not_a_comparison(tmp_path):
    other = write_jsonl(tmp_path / "other.jsonl", rows_of(FEW)[5:30])
    html = tmp_path / "report.html"
    done = cli("report", ZERO, other, "--html", html, "--no-semantic", "-e", "contains", "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["differences"] == []
    assert "no paired comparison" in summary["comparison_note"]
    assert "no paired comparison" in html.read_text(encoding="utf-8")


def test_a_failed_run_leaves_the_old_report_untouched(tmp_path):
    html = tmp_path / "report.html"
    html.write_text("old", encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"answers": ["a"], "prediction": "a"}\nnot json\n', encoding="utf-8")
    done = cli("report", ZERO, bad, "--html", html, "--no-semantic", "-e", "contains")
    assert done.returncode == 2
    assert f"{bad}:2:" in done.stderr
    assert html.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "report.html"]


def test_bad_output_paths_are_refused(tmp_path):
    done = cli("report", ZERO, "--html", tmp_path / "report.txt", "-e", "contains")
    assert done.returncode == 2
    assert "must end in .html" in done.stderr
    copy = write_jsonl(tmp_path / "copy.html", rows_of(ZERO)[:3])
    done = cli("report", copy, "--html", copy, "-e", "contains")
    assert done.returncode == 2
    assert "is the input file" in done.stderr
