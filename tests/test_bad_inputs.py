"""One test per row of the bad-input catalogue, docs/bad-inputs.md (rows name their tests).

Components are called directly; the command line runs on real files (in process; a real subprocess
for a child's own limits).
"""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
import resource
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from answer_eval.inputs.jsonl import parse_jsonl_line
from answer_eval.inputs.reading import MAX_ANSWER_CHARS
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    AnswerJudgeEvaluator,
    PairwiseEvaluator,
    ReferenceMetricsEvaluator,
    ToolCallEvaluator,
    TypedAnswerEvaluator,
)
from tests.cli_runs import cli_unless_limited
from tests.conftest import ROOT
from tests.hostile import HostileDict, HostileStr, RaisingAttributes, RaisingDunders, recursive_dict, recursive_list

CATALOGUE = ROOT / "docs" / "bad-inputs.md"
TOOL = '{"name": "f", "arguments": {"x": 1}}'


def score(path: Path, *args: Any, preexec_fn: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    """``answer-eval score PATH --no-progress ARGS``: in process, or as a subprocess that runs ``preexec_fn`` first."""
    return cli_unless_limited("score", path, "--no-progress", *args, preexec_fn=preexec_fn, timeout=120)


def summary(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON summary of a successful ``--format json`` run."""
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def write_lines(path: Path, *rows: Any) -> Path:
    """Write JSON rows (or raw bytes lines) as a JSONL file."""
    data = b"".join(row if isinstance(row, bytes) else json.dumps(row).encode() + b"\n" for row in rows)
    path.write_bytes(data)
    return path


GOOD = {"prediction": "Sheffield produced 12,400 units.", "answers": ["12400"]}

# Each component, called on (ground truths, predictions).
COMPONENTS: dict[str, Callable[[Any, Any], dict[str, Any]]] = {
    "contains": lambda g, p: AnswerContainsEvaluator().run(ground_truth_answers=g, predicted_answers=p),
    "judge": lambda g, p: AnswerJudgeEvaluator().run(ground_truth_answers=g, predicted_answers=p),
    "typed": lambda g, p: TypedAnswerEvaluator(default_type="numerical").run(
        ground_truth_answers=g, predicted_answers=p
    ),
    "metrics": lambda g, p: ReferenceMetricsEvaluator().run(ground_truth_answers=g, predicted_answers=p),
    "tools": lambda g, p: ToolCallEvaluator().run(ground_truth_answers=g, predicted_answers=p),
    "pairwise": lambda g, p: PairwiseEvaluator(AnswerContainsEvaluator(), n_resamples=100).run(
        ground_truth_answers=g, predicted_answers=p, baseline_answers=p
    ),
}
LABEL_COMPONENTS = [name for name in COMPONENTS if name != "tools"]  # tools take tool calls as labels


def label_for(name: str) -> Any:
    """A valid label of each component."""
    return TOOL if name == "tools" else "12"


# -- 1 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_mismatched_lengths(name: str) -> None:
    with pytest.raises(ValueError, match=r"(?=.*1)(?=.*2).*(same length|they must)"):
        COMPONENTS[name]([label_for(name)] * 2, ["12"])


# -- 2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_empty_lists_and_empty_file(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nothing to (score|judge)"):
        COMPONENTS[name]([], [])
    if name == "contains":
        done = score(write_lines(tmp_path / "empty.jsonl"))
        assert done.returncode == 2
        assert "no rows to score" in done.stderr


# -- 3 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_none_as_a_list(name: str) -> None:
    with pytest.raises(TypeError, match="must be a list, got NoneType"):
        COMPONENTS[name](None, None)


# -- 4 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_none_as_a_prediction(name: str, tmp_path: Path) -> None:
    result = COMPONENTS[name]([label_for(name)], [None])
    if name == "pairwise":
        assert result["candidate_individual_scores"] == [0.0]
    else:
        assert result["individual_scores"] == [0]
        assert result["failure_kinds"] == ["parse_failure"]
    if name == "contains":
        done = score(write_lines(tmp_path / "in.jsonl", {"prediction": None, "answers": "12"}), "--format", "json")
        assert summary(done)["failure_counts"]["parse_failure"] == 1


# -- 5 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_none_as_a_label(name: str, tmp_path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="position 0"):
        COMPONENTS[name]([None], ["12"])
    if name == "contains":
        done = score(write_lines(tmp_path / "in.jsonl", GOOD, {"prediction": "x", "answers": None}))
        assert done.returncode == 2
        assert "in.jsonl:2: field 'answers'" in done.stderr


# -- 6 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LABEL_COMPONENTS)
def test_nan_label(name: str, tmp_path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="position 0"):
        COMPONENTS[name]([math.nan], ["12"])
    if name == "contains":
        path = write_lines(tmp_path / "in.jsonl", GOOD, b'{"prediction": "x", "answers": NaN}\n')
        done = score(path)
        assert done.returncode == 2
        assert "in.jsonl:2:" in done.stderr


# -- 7 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LABEL_COMPONENTS)
def test_non_string_types(name: str) -> None:
    run = COMPONENTS[name]
    number = run([12], ["12"])
    assert (number.get("candidate_individual_scores") or number["individual_scores"]) == [1]
    for prediction in (12, 12.0, b"12", bytearray(b"12")):
        result = run(["12"], [prediction])
        if name != "pairwise":
            assert result["failure_kinds"] == ["parse_failure"], prediction
    for label in (True, False):
        with pytest.raises(TypeError, match="position 0"):
            run([label], ["12"])
    # A finite float is a number label for every evaluator; NaN and infinities are refused.
    floats = run([12.5], ["12.5"])
    assert (floats.get("candidate_individual_scores") or floats["individual_scores"]) in ([1], [1.0])
    if name != "typed":
        with pytest.raises(ValueError, match="position 0 is not a finite number"):
            run([float("nan")], ["12.5"])


# -- 8 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_nested_lists(name: str, tmp_path: Path) -> None:
    run = COMPONENTS[name]
    with pytest.raises((TypeError, ValueError), match="position 0"):
        run([[[label_for(name)]]], ["12"])
    result = run([label_for(name)], [[["12"]]])
    if name != "pairwise":
        assert result["failure_kinds"] == ["parse_failure"]
    if name == "contains":
        assert run(["Lyon"], [["Paris", "Lyon"]])["individual_scores"] == [1]  # a flat list is read
        done = score(write_lines(tmp_path / "in.jsonl", {"prediction": "x", "answers": [["x"]]}))
        assert done.returncode == 2
        assert "in.jsonl:1:" in done.stderr


# -- 9 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_blank_label(name: str, tmp_path: Path) -> None:
    for label in ("", "  ", []):
        with pytest.raises(ValueError, match="position 0"):
            COMPONENTS[name]([label], ["12"])
    if name == "contains":
        done = score(write_lines(tmp_path / "in.jsonl", {"prediction": "x", "answers": " "}))
        assert done.returncode == 2
        assert "in.jsonl:1:" in done.stderr
        assert "blank" in done.stderr


# -- 10 -----------------------------------------------------------------------------------------
def test_100_mb_prediction(tmp_path: Path) -> None:
    big = "Sheffield produced 12,400 units. " * (100_000_000 // 33)
    assert len(big) > MAX_ANSWER_CHARS
    # A length check, not a read (its time, seconds where folding would take minutes: benchmarks/hostile_texts.py).
    for name, run in COMPONENTS.items():
        result = run([label_for(name)], [big])
        if name == "pairwise":
            assert result["candidate_individual_scores"] == [0.0]
        else:
            assert result["individual_scores"] == [0]
            assert result["failure_kinds"] == ["error" if name != "tools" else "parse_failure"], name
    judged = AnswerJudgeEvaluator().run(ground_truth_answers=["12400"], predicted_answers=[big])
    assert "over the limit of 1,000,000" in judged["evidence"][0]
    path = write_lines(tmp_path / "big.jsonl", {"prediction": big, "answers": ["12400"]})
    done = score(path)
    assert done.returncode == 2
    assert "big.jsonl:1: the line is longer than 67,108,864 bytes" in done.stderr
    raised = summary(score(path, "--max-line-bytes", 200_000_000, "--format", "json"))
    assert raised["failure_counts"]["error"] == 1


# -- 11 -----------------------------------------------------------------------------------------
def test_100_mb_label_is_read_whole() -> None:
    # Linear, not limited: a label of 10 MB is read to its end (the time on 1 and 10 MB, linear, is
    # benchmarks/hostile_texts.py's to measure; the suite checks behaviour, not speed).
    label = ("a 12,400 units " * (10_000_000 // 15 + 1))[:10_000_000]
    result = AnswerContainsEvaluator().run(ground_truth_answers=[label], predicted_answers=["12400 units"])
    assert result["individual_scores"] == [0]
    assert result["failure_kinds"] == ["wrong"]  # graded, not refused


# -- 12 -----------------------------------------------------------------------------------------
def test_invalid_utf8(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", GOOD, b'{"prediction": "\xff\xfe", "answers": "x"}\n')
    done = score(path)
    assert done.returncode == 2
    assert "in.jsonl:2: not valid UTF-8 (byte 17)" in done.stderr


# -- 13 -----------------------------------------------------------------------------------------
def test_byte_order_mark(tmp_path: Path) -> None:
    line = json.dumps(GOOD).encode()
    first = write_lines(tmp_path / "first.jsonl", b"\xef\xbb\xbf" + line + b"\n")
    assert summary(score(first, "--format", "json"))["correct"] == 1
    later = write_lines(tmp_path / "later.jsonl", GOOD, b"\xef\xbb\xbf" + line + b"\n")
    done = score(later)
    assert done.returncode == 2
    assert "later.jsonl:2: not valid JSON" in done.stderr


# -- 14 -----------------------------------------------------------------------------------------
def test_crlf_line_ends(tmp_path: Path) -> None:
    rows = [GOOD, {"prediction": "Lyon", "answers": "Paris"}]
    lf = write_lines(tmp_path / "lf.jsonl", *rows)
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(lf.read_bytes().replace(b"\n", b"\r\n"))
    expected = summary(score(lf, "--format", "json"))
    got = summary(score(crlf, "--format", "json"))
    assert {k: got[k] for k in ("items", "correct", "failure_counts")} == {
        k: expected[k] for k in ("items", "correct", "failure_counts")
    }


# -- 15 -----------------------------------------------------------------------------------------
def test_duplicate_keys(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", b'{"prediction": "x", "answers": "x", "answers": "y"}\n')
    done = score(path)
    assert done.returncode == 2
    assert "in.jsonl:1: the key 'answers' appears twice in one JSON object" in done.stderr


# -- 16 -----------------------------------------------------------------------------------------
def test_line_is_an_array(tmp_path: Path) -> None:
    done = score(write_lines(tmp_path / "in.jsonl", GOOD, ["x", "x"]))
    assert done.returncode == 2
    assert "in.jsonl:2: expected a JSON object, got a JSON array" in done.stderr
    for raw, kind in ((b'"x"', "string"), (b"12", "number"), (b"null", "null"), (b"true", "boolean")):
        error = parse_jsonl_line(raw, 3, "f.jsonl")
        assert str(error) == f"f.jsonl:3: expected a JSON object, got a JSON {kind}"


# -- 17 -----------------------------------------------------------------------------------------
def test_missing_field(tmp_path: Path) -> None:
    done = score(write_lines(tmp_path / "in.jsonl", GOOD, {"prediction": "x"}))
    assert done.returncode == 2
    assert "in.jsonl:2: missing field 'answers' (fields: 'prediction')" in done.stderr


# -- 18 -----------------------------------------------------------------------------------------
def test_field_of_wrong_type(tmp_path: Path) -> None:
    done = score(write_lines(tmp_path / "in.jsonl", {"prediction": "x", "answers": {"a": 1}}))
    assert done.returncode == 2
    assert "in.jsonl:1: field 'answers'" in done.stderr
    assert "got dict" in done.stderr
    rows = [{"prediction": 12400, "answers": "12400"}, {"prediction": {"x": 1}, "answers": "12400"}]
    assert (
        summary(score(write_lines(tmp_path / "p.jsonl", *rows), "--format", "json"))["failure_counts"]["parse_failure"]
        == 2
    )
    with pytest.raises(TypeError, match=r"position 0.*got dict"):
        AnswerContainsEvaluator().run(ground_truth_answers=[{"a": 1}], predicted_answers=["x"])


# -- 19 -----------------------------------------------------------------------------------------
def test_output_path_equal_to_input(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", GOOD)
    before = path.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    for output in (path, link):
        done = score(path, "--output", output)
        assert done.returncode == 2
        assert "is the input file" in done.stderr
        assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "link.jsonl"]


# -- 20 -----------------------------------------------------------------------------------------
def test_directory_as_output(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", GOOD)
    folder = tmp_path / "out.jsonl"
    folder.mkdir()
    for output in (folder, tmp_path):
        done = score(path, "--output", output)
        assert done.returncode == 2, done.stderr
        assert "directory" in done.stderr or "must end in .jsonl or .csv" in done.stderr
    assert list(folder.iterdir()) == []


_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _CAP_FOWNER = 1, 2, 3
_PR_CAPBSET_DROP = 24


def _drop_file_capabilities() -> None:
    # Run in the child before exec: a root process keeps the capabilities in its bounding set
    # across exec; without CAP_DAC_OVERRIDE (and its kin) root meets permission bits like anyone.
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _CAP_FOWNER):
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed: cannot make root meet permission bits")


# -- 21 -----------------------------------------------------------------------------------------
@pytest.mark.subprocess  # the run's own capabilities or file size limit
def test_read_only_output_folder(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", GOOD)
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        as_root = os.geteuid() == 0
        done = score(path, "--output", folder / "out.jsonl", preexec_fn=_drop_file_capabilities if as_root else None)
        assert done.returncode == 2, done.stdout
        assert f"output folder {folder} is not writable" in done.stderr
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def _small_disk() -> None:
    # A file size limit binds root too: a write past it fails (EFBIG) as a full disk would
    # (ENOSPC); the signal it would send is ignored so the write returns the error.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))


# -- 22 -----------------------------------------------------------------------------------------
@pytest.mark.subprocess  # the run's own capabilities or file size limit
def test_disk_full_write(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    path = write_lines(source / "in.jsonl", *([GOOD] * 3000))  # about 200 kB of output
    out = tmp_path / "out"
    out.mkdir()
    for name in ("results.jsonl", "results.csv"):
        done = score(path, "--output", out / name, preexec_fn=_small_disk)
        assert done.returncode == 2, done.stdout
        assert f"cannot write the output {out / name}" in done.stderr
        left = [path.name for path in out.iterdir()]
        assert name not in left  # no output
        assert not [found for found in left if found.endswith(".tmp")]  # no temporary file
        # The rows recorded before the disk filled are kept for --resume, as after Ctrl-C.
        assert all(found.startswith(f".{name}.partial") for found in left if found.startswith(f".{name}"))
    assert summary(score(path, "--output", out / "results.jsonl", "--format", "json"))["items"] == 3000


# -- 23 -----------------------------------------------------------------------------------------
def test_missing_input_or_output_folder(tmp_path: Path) -> None:
    done = score(tmp_path / "nope.jsonl")
    assert done.returncode == 2
    assert "nope.jsonl does not exist" in done.stderr
    path = write_lines(tmp_path / "in.jsonl", GOOD)
    done = score(path, "--output", tmp_path / "no" / "out.jsonl")
    assert done.returncode == 2
    assert f"output folder {tmp_path / 'no'} does not exist" in done.stderr


# -- 24 -----------------------------------------------------------------------------------------
def test_line_over_the_limit(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "in.jsonl", GOOD, {"prediction": "x" * 5000, "answers": "x"}, GOOD)
    done = score(path, "--max-line-bytes", 1000)
    assert done.returncode == 2
    assert "in.jsonl:2: the line is longer than 1,000 bytes" in done.stderr
    skipped = summary(score(path, "--max-line-bytes", 1000, "--skip-invalid", "--format", "json"))
    assert (skipped["items"], skipped["invalid_lines"]) == (2, 1)


# -- 25 -----------------------------------------------------------------------------------------
def test_huge_number_and_deep_nesting(tmp_path: Path) -> None:
    huge = b'{"prediction": "x", "answers": ' + b"1" * 5000 + b"}\n"
    deep = b'{"prediction": ' + b"[" * 100_000 + b"]" * 100_000 + b', "answers": "x"}\n'
    path = write_lines(tmp_path / "in.jsonl", GOOD, huge, deep)
    done = score(path)
    assert done.returncode == 2
    assert "in.jsonl:2:" in done.stderr
    assert "more than 4300 digits" in done.stderr
    assert "nested too deeply" in str(parse_jsonl_line(deep, 3, "in.jsonl"))
    skipped = summary(score(path, "--skip-invalid", "--format", "json"))
    assert (skipped["items"], skipped["invalid_lines"]) == (1, 2)


# -- 26 -----------------------------------------------------------------------------------------
def test_lone_surrogate(tmp_path: Path) -> None:
    raw = b'{"prediction": "Paris \\ud800", "answers": "Paris", "id": "a\\udfffb"}\n'
    path = write_lines(tmp_path / "in.jsonl", raw)
    out = tmp_path / "out.jsonl"
    result = summary(score(path, "--output", out, "--format", "json"))
    assert result["correct"] == 1
    row = json.loads(out.read_text(encoding="utf-8"))
    assert row["prediction"] == "Paris \ud800"
    assert row["id"] == "a\udfffb"


# -- 27 -----------------------------------------------------------------------------------------
def test_skip_invalid_counts_bad_lines(tmp_path: Path) -> None:
    rows = [GOOD, b"[1]\n", b"{not json\n", {"prediction": "x"}, b"\xff\n", GOOD]
    result = summary(score(write_lines(tmp_path / "in.jsonl", *rows), "--skip-invalid", "--format", "json"))
    assert (result["items"], result["correct"], result["invalid_lines"]) == (2, 2, 4)


# -- 28 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_hostile_objects(name: str) -> None:
    hostile = [
        HostileStr("12"),
        HostileDict(answer="12"),
        RaisingDunders(),
        RaisingAttributes(),
        recursive_list(),
        recursive_dict(),
        10**5000,
        math.nan,
        ValueError("the tool failed"),
        object(),
    ]
    result = COMPONENTS[name]([label_for(name)] * len(hostile), hostile)
    scores = result.get("candidate_individual_scores") or result["individual_scores"]
    assert len(scores) == len(hostile)
    assert all(0 <= value <= 1 for value in scores)
    if name in ("contains", "judge", "typed", "metrics"):
        assert scores[0] == 1  # a str subclass is read as its characters
        assert result["failure_kinds"][8] == "error"  # an exception is a failed result


# -- 29 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(COMPONENTS))
def test_tuples_instead_of_lists(name: str) -> None:
    if name == "typed":
        with pytest.raises(TypeError, match="must be a list, got tuple"):
            COMPONENTS[name]((label_for(name),), ("12",))
    else:
        result = COMPONENTS[name]((label_for(name),), (TOOL if name == "tools" else "12",))
        assert (result.get("candidate_individual_scores") or result["individual_scores"]) == [1]


# -- 30 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["numerical", "regression"])
def test_infinite_numbers(kind: str) -> None:
    predictions = ["1e999999", "inf", "-inf", "NaN", "9" * 5000, "1e-999999"]
    evaluator = TypedAnswerEvaluator(default_type=kind)
    result = evaluator.run(predicted_answers=predictions, ground_truth_answers=["12"] * len(predictions))
    assert result["individual_scores"] == [0.0] * len(predictions)
    assert set(result["failure_kinds"]) <= {"wrong", "parse_failure"}


# -- 31 -----------------------------------------------------------------------------------------
def test_wrong_typed_parameters(tmp_path: Path) -> None:
    data = AnswerContainsEvaluator().to_dict()
    data["init_parameters"]["extra_not_found_phrases"] = "not a list"
    with pytest.raises(TypeError, match="extra_not_found_phrases must be a list of str"):
        AnswerContainsEvaluator.from_dict(data)
    done = score(write_lines(tmp_path / "in.jsonl", GOOD), "--no-such-option")
    assert done.returncode == 2
    assert "unrecognized arguments" in done.stderr


# -- the table and the tests stay in step --------------------------------------------------------
def test_every_row_has_its_test() -> None:
    # A row names a test of this module (`test_name`) or of another one (`tests/test_file.py::test_name`).
    table = [line for line in CATALOGUE.read_text(encoding="utf-8").splitlines() if re.match(r"\| \d+ \|", line)]
    named = [re.findall(r"`((?:tests/\w+\.py::)?test_\w+)`", line.rsplit("|", 2)[-2]) for line in table]
    assert all(len(names) == 1 for names in named), "every row names exactly one test in its last column"
    rows = [names[0] for names in named]
    assert [int(line.split("|")[1]) for line in table] == list(range(1, len(table) + 1))
    here = {name for name in rows if "::" not in name}
    defined = {name for name, value in globals().items() if name.startswith("test_") and callable(value)}
    assert here <= defined, f"rows without a test: {here - defined}"
    assert defined - here == {"test_every_row_has_its_test"}, "tests without a row"
    for name in set(rows) - here:
        module, test = name.split("::")
        assert re.search(rf"^def {test}\(", (ROOT / module).read_text(encoding="utf-8"), re.MULTILINE), name
    assert len(rows) == len(set(rows))


# -- 32 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LABEL_COMPONENTS)
def test_hostile_labels(name: str) -> None:
    class Twelve(int):
        def __str__(self) -> str:
            raise RuntimeError("hostile")

    run = COMPONENTS[name]
    for label in (HostileStr("12"), Twelve(12)):
        result = run([label], ["12"])
        assert (result.get("candidate_individual_scores") or result["individual_scores"]) == [1]
    with pytest.raises(ValueError, match="position 0 is an integer too long"):
        run([10**5000], ["12"])
