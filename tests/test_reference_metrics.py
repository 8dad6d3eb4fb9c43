"""Exact match, BLEU and ROUGE equal to sacrebleu and rouge-score, and ReferenceMetricsEvaluator as a component."""

import asyncio
import json
import os
import subprocess
import sys

import pytest
import sacrebleu
from haystack import Pipeline
from haystack.components.evaluators import AnswerExactMatchEvaluator
from haystack.core.errors import DeserializationError
from haystack.dataclasses import ChatMessage, GeneratedAnswer
from haystack.evaluation import EvaluationRunResult
from rouge_score import rouge_scorer

from answer_eval.evaluators.reference_scoring import (
    ROUGE_TYPES,
    BleuScorer,
    BleuStats,
    ReferenceMetrics,
    ReferenceOptions,
    exact_match,
)
from haystack_integrations.components.evaluators.answer_eval import ReferenceMetricsEvaluator
from tests.conftest import EXAMPLES, ROOT

ROWS = [json.loads(line) for line in (EXAMPLES / "data" / "nq301_davinci_zeroshot.jsonl").read_text().splitlines()]
PREDICTIONS = [row["prediction"] for row in ROWS]
REFERENCES = [row["answers"] for row in ROWS]  # 301 items, 1 to 5 references each
# Single-reference pairs where the reference is a sentence too: the model's answer against the
# next item's (a different but fluent text), so n-gram overlaps of every order occur.
SENTENCE_PAIRS = [(PREDICTIONS[i], PREDICTIONS[i + 1] + " " + REFERENCES[i][0]) for i in range(0, 120)]


def scaled(score):
    """sacrebleu's 0-100 score as the evaluator reports it: divided by 100, capped at 1."""
    return min(1.0, score.score / 100)


def bleu_options(options):
    """sacrebleu's keyword names (the tests compare with sacrebleu.sentence_bleu) as the evaluator's options."""
    names = {"use_effective_order": "use_effective_order"}
    return ReferenceOptions.from_dict({names.get(key, f"bleu_{key}"): value for key, value in options.items()})


def reference_streams(references):
    width = max(len(refs) for refs in references)
    return [[refs[i] if i < len(refs) else None for refs in references] for i in range(width)]


def test_the_fixed_corpus_has_multiple_references():
    assert len(PREDICTIONS) == 301
    assert sum(len(refs) > 1 for refs in REFERENCES) >= 50


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"tokenize": "intl"},
        {"tokenize": "char", "lowercase": True},
        {"smooth_method": "floor", "smooth_value": 0.2},
        {"smooth_method": "add-k"},
        {"smooth_method": "none", "use_effective_order": False},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults",
)
def test_sentence_bleu_is_sacrebleu_best_over_references_scaled(options):
    scorer = BleuScorer(bleu_options(options))
    sacre = options  # the same names as sacrebleu.sentence_bleu's
    for prediction, references in zip(PREDICTIONS, REFERENCES, strict=True):
        expected = max(scaled(sacrebleu.sentence_bleu(prediction, [ref], **sacre)) for ref in references)
        assert scorer.sentence(prediction, references) == expected
    for prediction, reference in SENTENCE_PAIRS:
        assert scorer.sentence(prediction, [reference]) == scaled(
            sacrebleu.sentence_bleu(prediction, [reference], **sacre)
        )


@pytest.mark.parametrize(
    "options",
    [{}, {"tokenize": "intl"}, {"smooth_method": "add-k", "smooth_value": 0.5}, {"lowercase": True}],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults",
)
def test_corpus_bleu_is_sacrebleu_corpus_bleu_with_all_references(options):
    scorer = BleuScorer(bleu_options(options))
    stats = BleuStats()
    for prediction, references in zip(PREDICTIONS, REFERENCES, strict=True):
        scorer.add(stats, prediction, references)
    expected = scaled(sacrebleu.corpus_bleu(PREDICTIONS, reference_streams(REFERENCES), **options))
    assert scorer.corpus(stats) == expected
    assert 0 < expected < 1


def test_corpus_bleu_on_sentence_references():
    scorer = BleuScorer()
    stats = BleuStats()
    for prediction, reference in SENTENCE_PAIRS:
        scorer.add(stats, prediction, [reference])
    hypotheses = [p for p, _ in SENTENCE_PAIRS]
    assert scorer.corpus(stats) == scaled(sacrebleu.corpus_bleu(hypotheses, [[r for _, r in SENTENCE_PAIRS]]))


@pytest.mark.parametrize("rouge_type", ROUGE_TYPES)
def test_rouge_equals_rouge_score_for_every_type(rouge_type):
    ours = ReferenceMetrics(ReferenceOptions(metrics=("rouge",), rouge_type=rouge_type))
    theirs = rouge_scorer.RougeScorer([rouge_type])
    for prediction, reference in SENTENCE_PAIRS[:60]:
        expected = theirs.score(reference, prediction)[rouge_type].fmeasure
        assert ours.rouge.score(prediction, [reference]) == expected


def test_rouge_takes_the_best_reference_with_stemming_like_score_multi():
    ours = ReferenceMetrics(ReferenceOptions(metrics=("rouge",), rouge_type="rougeL", use_stemmer=True))
    theirs = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    for prediction, references in zip(PREDICTIONS, REFERENCES, strict=True):
        expected = theirs.score_multi(references, prediction)["rougeL"].fmeasure
        assert ours.rouge.score(prediction, references) == expected


def test_stemming_changes_rouge():
    plain = ReferenceMetrics(ReferenceOptions(metrics=("rouge",), rouge_type="rouge1"))
    stemmed = ReferenceMetrics(ReferenceOptions(metrics=("rouge",), rouge_type="rouge1", use_stemmer=True))
    assert plain.rouge.score("the towers were built", ["tower building"]) == 0
    assert stemmed.rouge.score("the towers were built", ["tower building"]) > 0


def test_rouge_lsum_splits_at_newlines_by_default():
    ours = ReferenceMetrics(ReferenceOptions(metrics=("rouge",)))
    one_line = ours.rouge.score(
        "The tower is tall. It was built in 1889.", ["It was built in 1889. The tower is tall."]
    )
    lines = ours.rouge.score("The tower is tall.\nIt was built in 1889.", ["It was built in 1889.\nThe tower is tall."])
    assert one_line < 1.0
    assert lines == 1.0


def test_split_summaries_without_nltk_data_fails_at_construction_with_the_fix(tmp_path, monkeypatch):
    import nltk

    # The machine has no punkt_tab data; pointing NLTK at an empty folder makes sure of it.
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    with pytest.raises(LookupError, match=r"nltk\.downloader punkt_tab"):
        ReferenceMetricsEvaluator(metrics=["rouge"], split_summaries=True)
    # Only rougeLsum splits sentences: other types need no data.
    assert ReferenceMetricsEvaluator(metrics=["rouge"], rouge_type="rouge1", split_summaries=True)


@pytest.mark.slow
@pytest.mark.subprocess  # nltk reads NLTK_DATA once, when a process imports it
def test_split_summaries_equals_rouge_score_with_nltk_sentence_splitting(tmp_path):
    # An (untrained) punkt_tab model written by the test: the point is that both sides split alike.
    model = tmp_path / "tokenizers" / "punkt_tab" / "english"
    model.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (model / name).write_text("", encoding="utf-8")
    code = """
import json, sys
from rouge_score import rouge_scorer
from haystack_integrations.components.evaluators.answer_eval import ReferenceMetricsEvaluator
pairs = json.loads(sys.stdin.read())
ours = ReferenceMetricsEvaluator(metrics=["rouge"], split_summaries=True)
plain = ReferenceMetricsEvaluator(metrics=["rouge"])
theirs = rouge_scorer.RougeScorer(["rougeLsum"], split_summaries=True)
got = ours.run(predicted_answers=[p for p, _ in pairs], ground_truth_answers=[r for _, r in pairs])
unsplit = plain.run(predicted_answers=[p for p, _ in pairs], ground_truth_answers=[r for _, r in pairs])
expected = [theirs.score(r, p)["rougeLsum"].fmeasure for p, r in pairs]
print(json.dumps({"equal": got["individual_scores"] == expected,
                  "differs": got["individual_scores"] != unsplit["individual_scores"]}))
"""
    pairs = [
        ("The tower is tall. It was built in 1889.", "It was built in 1889. The tower is tall."),
        *SENTENCE_PAIRS[:30],
    ]
    env = {**os.environ, "NLTK_DATA": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(pairs), capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"equal": True, "differs": True}


@pytest.mark.parametrize(
    ("prediction", "references", "options", "expected"),
    [
        ("Paris", ["Paris"], {}, 1),
        (" Paris\n", ["Paris"], {}, 1),
        (" Paris\n", ["Paris"], {"strip": False}, 0),
        ("PARIS", ["Paris"], {}, 0),
        ("PARIS", ["Paris"], {"ignore_case": True}, 1),
        ("Straße", ["STRASSE"], {"ignore_case": True}, 1),
        ("12,400", ["12400"], {"ignore_case": True}, 0),
        ("12,400", ["12400"], {"fold": True}, 1),
        ("New\u00a0 York", ["new york"], {"fold": True}, 1),
        ("Lyon", ["Paris", "Lyon"], {}, 1),
        ("Paris, France", ["Paris"], {"fold": True}, 0),
    ],
)
def test_exact_match_options(prediction, references, options, expected):
    assert exact_match(prediction, references, **options) == expected


def test_component_outputs_every_metric_and_the_first_as_the_flat_score():
    evaluator = ReferenceMetricsEvaluator(metrics=["rouge", "exact_match", "bleu"])
    result = evaluator.run(predicted_answers=PREDICTIONS, ground_truth_answers=REFERENCES)
    assert set(result["metrics"]) == {"rouge", "exact_match", "bleu"}
    assert result["individual_scores"] == result["metrics"]["rouge"]["individual_scores"]
    assert result["score"] == result["metrics"]["rouge"]["score"]
    assert type(result["score"]) is float
    assert set(result["metrics"]["bleu"]) == {"score", "individual_scores", "corpus_score"}
    assert "corpus_score" not in result["metrics"]["rouge"]
    expected_corpus = scaled(sacrebleu.corpus_bleu(PREDICTIONS, reference_streams(REFERENCES)))
    assert result["metrics"]["bleu"]["corpus_score"] == expected_corpus
    bleu = result["metrics"]["bleu"]["individual_scores"]
    assert result["metrics"]["bleu"]["score"] == pytest.approx(sum(bleu) / len(bleu))
    assert result["failure_kinds"] == [None] * 301


def test_default_metrics_are_exact_match_bleu_rouge():
    evaluator = ReferenceMetricsEvaluator()
    result = evaluator.run(predicted_answers=["Paris"], ground_truth_answers=["Paris"])
    assert list(result["metrics"]) == ["exact_match", "bleu", "rouge"]
    assert result["individual_scores"] == [1]
    assert result["metrics"]["bleu"]["individual_scores"] == [1.0]  # capped: sacrebleu gives 100.00000000000004
    assert sacrebleu.sentence_bleu("Paris", ["Paris"]).score > 100


def test_predictions_in_any_form_and_unreadable_ones_score_zero_with_a_failure_kind():
    evaluator = ReferenceMetricsEvaluator(metrics=["exact_match", "rouge"])
    result = evaluator.run(
        predicted_answers=[
            GeneratedAnswer(data="Paris", query="q", documents=[]),
            ChatMessage.from_assistant("Paris"),
            {"replies": ["Paris"], "meta": [{}]},
            None,
            "   ",
            RuntimeError("timeout"),
        ],
        ground_truth_answers=["Paris"] * 6,
    )
    assert result["individual_scores"] == [1, 1, 1, 0, 0, 0]
    assert result["metrics"]["rouge"]["individual_scores"] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert result["failure_kinds"] == [None, None, None, "parse_failure", "parse_failure", "error"]
    assert result["failure_counts"]["parse_failure"] == 2
    assert result["failure_counts"]["error"] == 1


def test_feeds_the_same_data_as_exact_match_and_int_labels():
    data = {"predicted_answers": ["Berlin", "12400"], "ground_truth_answers": ["Berlin", 12400]}
    ours = ReferenceMetricsEvaluator(metrics=["exact_match"]).run(**data)
    theirs = AnswerExactMatchEvaluator().run(
        predicted_answers=data["predicted_answers"], ground_truth_answers=["Berlin", "12400"]
    )
    assert ours["individual_scores"] == theirs["individual_scores"] == [1, 1]


@pytest.mark.parametrize(
    ("predicted", "truths", "error", "message"),
    [
        (["a", "b"], ["a"], ValueError, "ground_truth_answers has 1 items but predicted_answers has 2"),
        ([], [], ValueError, "empty"),
        (["a"], [["x", " "]], ValueError, "position 0"),
        (["a", "b"], ["a", []], ValueError, "position 1"),
        (["a"], [float("nan")], ValueError, "position 0 is not a finite number"),
        ("a", ["a"], TypeError, "predicted_answers must be a list"),
    ],
)
def test_bad_inputs_raise_naming_the_problem(predicted, truths, error, message):
    with pytest.raises(error, match=message):
        ReferenceMetricsEvaluator().run(predicted_answers=predicted, ground_truth_answers=truths)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"metrics": ["bleu", "meteor"]}, ValueError, "meteor"),
        ({"metrics": ["bleu", "bleu"]}, ValueError, "at most once"),
        ({"metrics": []}, ValueError, "non-empty"),
        ({"metrics": "bleu"}, TypeError, "metrics"),
        ({"rouge_type": "rouge10"}, ValueError, "rouge_type"),
        ({"bleu_tokenize": "flores200"}, ValueError, "tokenize"),
        ({"bleu_smooth_method": "linear"}, ValueError, "smooth_method"),
        ({"use_stemmer": "yes"}, TypeError, "use_stemmer"),
        ({"bleu_smooth_value": "0.1"}, TypeError, "bleu_smooth_value"),
        ({"fold": 1}, TypeError, "fold"),
    ],
)
def test_bad_parameters_are_refused_in_init_and_so_in_from_dict(options, error, message):
    with pytest.raises(error, match=message):
        ReferenceMetricsEvaluator(**options)
    data = ReferenceMetricsEvaluator().to_dict()
    data["init_parameters"].update(options)
    with pytest.raises(error, match=message):
        ReferenceMetricsEvaluator.from_dict(data)


def test_to_dict_from_dict_round_trip():
    evaluator = ReferenceMetricsEvaluator(
        metrics=["bleu", "rouge"], bleu_tokenize="intl", rouge_type="rouge2", use_stemmer=True, fold=True
    )
    data = evaluator.to_dict()
    assert (
        data["type"]
        == "haystack_integrations.components.evaluators.answer_eval.reference_metrics.ReferenceMetricsEvaluator"
    )
    assert data["init_parameters"]["metrics"] == ["bleu", "rouge"]
    assert data["init_parameters"]["rouge_type"] == "rouge2"
    loaded = ReferenceMetricsEvaluator.from_dict(data)
    assert loaded.to_dict() == data
    inputs = {"predicted_answers": PREDICTIONS[:20], "ground_truth_answers": REFERENCES[:20]}
    assert loaded.run(**inputs) == evaluator.run(**inputs)
    with pytest.raises(DeserializationError):
        ReferenceMetricsEvaluator.from_dict({"type": "os.system", "init_parameters": {}})


def test_run_async_matches_run():
    evaluator = ReferenceMetricsEvaluator()
    inputs = {"predicted_answers": PREDICTIONS[:30], "ground_truth_answers": REFERENCES[:30]}
    assert asyncio.run(evaluator.run_async(**inputs)) == evaluator.run(**inputs)


def test_pipeline_dumps_and_loads_without_an_allow_list_and_feeds_evaluation_run_result():
    pipeline = Pipeline()
    pipeline.add_component("exact", AnswerExactMatchEvaluator())
    pipeline.add_component("reference", ReferenceMetricsEvaluator(metrics=["rouge", "bleu"], rouge_type="rouge1"))
    loaded = Pipeline.loads(pipeline.dumps())
    truths = [refs[0] for refs in REFERENCES[:10]]
    data = {"predicted_answers": PREDICTIONS[:10], "ground_truth_answers": truths}
    result = loaded.run({"exact": data, "reference": data})
    assert result["reference"] == pipeline.run({"exact": data, "reference": data})["reference"]
    report = EvaluationRunResult(
        run_name="nq",
        inputs=data,
        results={"exact": result["exact"], "rouge1": result["reference"]},
    )
    aggregated = report.aggregated_report(output_format="json")
    assert aggregated["metrics"] == ["exact", "rouge1"]
    assert aggregated["score"][1] == result["reference"]["metrics"]["rouge"]["score"]
    assert report.detailed_report(output_format="json")["rouge1"] == result["reference"]["individual_scores"]


@pytest.mark.slow
@pytest.mark.subprocess  # what a fresh interpreter imports
def test_metric_packages_are_imported_only_when_needed_and_their_absence_names_the_extra():
    # A fresh interpreter: importing the components imports neither package; then both are made
    # unimportable (a None entry in sys.modules makes "import x" raise ImportError, as when x is
    # not installed) and building BLEU or ROUGE must say which extra to install.
    code = """
import sys
import haystack_integrations.components.evaluators.answer_eval as package
print(sorted(name for name in ("sacrebleu", "rouge_score") if name in sys.modules))
sys.modules["sacrebleu"] = sys.modules["rouge_score"] = None
exact = package.ReferenceMetricsEvaluator(metrics=["exact_match"])
print(exact.run(predicted_answers=["a"], ground_truth_answers=["a"])["score"])
for metric in ("bleu", "rouge"):
    try:
        package.ReferenceMetricsEvaluator(metrics=[metric])
    except ImportError as exc:
        print(metric, exc)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["[]", "1.0"]
    assert lines[2].startswith("bleu sacrebleu is needed")
    assert lines[3].startswith("rouge rouge-score is needed")
    assert all('pip install "answer-eval-haystack[metrics]"' in line for line in lines[2:])
