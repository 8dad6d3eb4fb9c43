"""AnswerJudge and AnswerJudgeEvaluator: each cascade stage on real examples, offline."""

import asyncio
import json

import pytest
from haystack import Pipeline
from haystack.core.errors import DeserializationError
from haystack.dataclasses import ChatMessage, GeneratedAnswer
from haystack.evaluation import EvaluationRunResult

from answer_eval.evaluators.judge.acceptance_model import DESCRIPTIONS
from answer_eval.evaluators.judge.cascade import DEFAULT_MODEL_PATH, AnswerJudge, JudgeModel, Stage
from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore, JudgeOptions
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator
from tests.cli_runs import cli
from tests.conftest import ROOT

DEV = ROOT / "data" / "judge" / "nq301-dev.jsonl"
ROWS = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def lexical():
    return AnswerJudge()


def test_stage_contains_decides_at_once(lexical):
    verdict = lexical.judge("Sheffield produced 12,400 units.", "12400")
    assert (verdict.correct, verdict.stage, verdict.failure_kind) == (True, Stage.CONTAINS, None)
    assert '"12400"' in verdict.evidence
    assert verdict.confidence == pytest.approx(verdict.acceptance)
    assert verdict.acceptance > 0.9  # the strict rules found the number: people nearly always accept


def test_stage_lexical_accepts_and_says_why(lexical):
    verdict = lexical.judge("Nixon", ["President Richard Nixon", "Richard Nixon"])
    assert (verdict.correct, verdict.stage) == (True, Stage.LEXICAL)
    assert "less specific" in verdict.evidence
    assert "nixon" in verdict.evidence
    dated = lexical.judge("14 December 1972", "December 14, 1972")
    assert dated.correct
    assert "every word" in dated.evidence


@pytest.mark.parametrize(
    ("prediction", "gold", "question"),
    [
        ("579", "2,579", "how many steps does the cn tower have"),
        ("Dolly Mapp", "Dollree Mapp", "who was involved in the mapp vs ohio case"),
        ("New Mexico", "southern New Mexico", "where are the organ mountains in new mexico"),
    ],
)
def test_no_evidence_is_wrong(lexical, prediction, gold, question):
    verdict = lexical.judge(prediction, gold, question)
    assert (verdict.correct, verdict.stage, verdict.failure_kind) == (False, Stage.NO_EVIDENCE, "wrong")
    assert verdict.confidence == pytest.approx(1 - verdict.acceptance)


def test_acceptance_is_the_shipped_models_probability_of_the_answers_features(lexical):
    truths, answers, questions = ["Richard Nixon", "2,579"], ["Nixon", "579"], [None, "how many steps"]
    verdicts = lexical.judge_batch(truths, answers, questions)
    rows = lexical.feature_rows(truths, answers, questions)
    model = lexical.model.acceptance
    assert model is not None
    for verdict, row in zip(verdicts, rows, strict=True):
        assert verdict.acceptance == pytest.approx(model.probability(row))
        assert f"probability {verdict.acceptance:.0%}" in verdict.evidence
        assert "weighed most:" in verdict.evidence
    assert rows[0]["rules_accept"] == 1.0
    assert rows[1]["number_conflict"] == 1.0
    assert verdicts[0].acceptance > verdicts[1].acceptance


def test_a_format_1_model_file_keeps_its_stage_confidences(tmp_path):
    old = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    old = {"format": 1, "confidence": old["confidence"], "semantic": old["semantic"]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    judge = AnswerJudge(model=JudgeModel.load(path))
    right, wrong = judge.judge_batch(["Richard Nixon", "Dollree Mapp"], ["Richard Nixon", "Dolly Mapp"])
    assert right.confidence == pytest.approx(old["confidence"]["contains"])
    assert wrong.confidence == pytest.approx(1 - old["confidence"]["no_evidence_acceptance"])


def test_restating_the_question_is_named(lexical):
    verdict = lexical.judge("New Mexico", "southern New Mexico", "where are the organ mountains in new mexico")
    assert "restates the question" in verdict.evidence


def test_the_evidence_never_claims_numbers_of_a_gold_that_has_none_nor_a_question_not_given(lexical):
    # Issue 38, point 20: "every number of the gold is in it" for the gold "green" (true only vacuously).
    golds = ["green", "South Carolina", "Guwahati"]
    answers = ["The colour is blue.", "The Baylor Lady Bears won in 2020.", "It was held in Shillong in 1905."]
    questions = [None, "who won last year's ncaa women's basketball", "where was the session held in 1905"]
    rows = lexical.feature_rows(golds, answers, questions)
    assert all(row["numbers_kept"] == 1.0 and row["gold_has_numbers"] == 0.0 for row in rows)  # weighed as learned
    for verdict in lexical.judge_batch(golds, answers, questions):
        assert "number of the gold" not in verdict.evidence
    model = lexical.model.acceptance
    assert model is not None
    every = len(model.features)  # every feature that pushed is named: the vacuous one is not
    for toward in (True, False):
        assert DESCRIPTIONS["numbers_kept"] not in model.explain(rows[0], toward, every)[1]
    with_number = lexical.feature_rows(["route 66"], ["It is route 66, the old road."])[0]
    assert with_number["numbers_kept"] == with_number["gold_has_numbers"] == 1.0
    named = [words for toward in (True, False) for words in model.explain(with_number, toward, every)[1]]
    assert DESCRIPTIONS["numbers_kept"] in named  # a gold with a number it keeps: said, as before
    # An answer of common words only, with no question given, restates no question.
    assert "restates" not in lexical.judge("the of", "Paris").evidence
    assert "holds no content word" in lexical.judge("the of", "Paris").evidence


def test_failure_kinds_are_exactly_those_of_answer_contains(lexical):
    from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

    truths = ["Paris", "Paris", "Paris", "Paris", "NOT_IN_DOCUMENT", "7", "Paris"]
    predictions = [
        "Lyon",
        None,
        RuntimeError("timeout"),
        "NOT_IN_DOCUMENT",
        "It is Paris.",
        {"answer": "Three", "partial": True, "notes": ["cost_cap_reached"]},
        ChatMessage.from_assistant("Marseille", meta={"finish_reason": "content_filter"}),
    ]
    contains = AnswerContainsEvaluator().run(ground_truth_answers=truths, predicted_answers=predictions)
    verdicts = lexical.judge_batch(truths, predictions)
    assert [v.failure_kind for v in verdicts] == contains["failure_kinds"]
    assert [v.stage for v in verdicts][:4] == [Stage.NO_EVIDENCE, Stage.NO_ANSWER, Stage.NO_ANSWER, Stage.NO_ANSWER]


def test_stopped_run_with_lenient_evidence_is_right(lexical):
    verdict = lexical.judge(
        {"answer": "It was Nixon, and", "partial": True, "notes": ["cost_cap_reached"]}, "Richard Nixon"
    )
    assert verdict.correct
    assert verdict.stage == Stage.LEXICAL


def test_shipped_model_records_how_it_was_trained():
    import hashlib

    data = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    assert data["format"] == 2
    assert data["trained_by"] == "scripts/train_judge.py"
    for source in data["data"]:
        assert hashlib.sha256((ROOT / source["file"]).read_bytes()).hexdigest() == source["sha256"]
    assert len(data["data"]) == 3
    assert data["options"]["sets_weighted_equally"] is True
    assert set(data["cross_set"]) == {"nq301-dev", "efficientqa", "evouna-tq"}
    for figures in data["cross_set"].values():
        assert len(figures["fitted_on"]) == 2
        table = figures["reliability_of_confidence"]
        weighted = sum(row["answers"] * abs(row["predicted"] - row["observed"]) for row in table)
        error = weighted / sum(row["answers"] for row in table)
        assert error == pytest.approx(figures["confidence_calibration_error"], abs=2e-3)  # the table is the figure


def test_lexical_agreement_on_the_dev_data_matches_the_shipped_figure(lexical):
    verdicts = lexical.judge_batch(
        [r["answers"] for r in ROWS], [r["prediction"] for r in ROWS], [r["question"] for r in ROWS]
    )
    agreement = sum(v.correct == r["human_acceptable"] for v, r in zip(verdicts, ROWS, strict=False)) / len(ROWS)
    shipped = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))["cross_set"]["nq301-dev"]["agreement"]
    assert agreement == pytest.approx(shipped, abs=5e-5)  # the code and the shipped model agree
    assert agreement >= 0.81


def test_model_file_is_validated(tmp_path):
    bad = tmp_path / "model.json"
    bad.write_text(json.dumps({"format": 1, "confidence": {"contains": "0.9"}}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"confidence\.contains"):
        JudgeModel.load(bad)
    bad.write_text(json.dumps({"format": 3}), encoding="utf-8")
    with pytest.raises(ValueError, match="format 1 or 2"):
        JudgeModel.load(bad)
    shipped = json.loads(DEFAULT_MODEL_PATH.read_text(encoding="utf-8"))
    broken = dict(shipped, acceptance=dict(shipped["acceptance"], weights=shipped["acceptance"]["weights"][:-1]))
    bad.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(ValueError, match=r"acceptance\.weights"):
        JudgeModel.load(bad)
    renamed = ["__import__", *shipped["acceptance"]["features"][1:]]
    unknown = dict(shipped, acceptance=dict(shipped["acceptance"], features=renamed))
    bad.write_text(json.dumps(unknown), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown acceptance features"):
        JudgeModel.load(bad)


# ---- the component ---------------------------------------------------------------------------


def test_component_outputs():
    judge = AnswerJudgeEvaluator()
    result = judge.run(
        ground_truth_answers=[["Richard Nixon"], ["Dollree Mapp"], "December 14, 1972", "12400"],
        predicted_answers=[
            "Nixon",
            "Dolly Mapp",
            GeneratedAnswer(data="14 December 1972", query="q", documents=[]),
            None,
        ],
    )
    assert result["individual_scores"] == [1, 0, 1, 0]
    assert result["score"] == 0.5
    assert type(result["score"]) is float
    assert result["stages"] == [Stage.LEXICAL, Stage.NO_EVIDENCE, Stage.LEXICAL, Stage.NO_ANSWER]
    assert result["failure_kinds"] == [None, "wrong", None, "parse_failure"]
    assert len(result["evidence"]) == len(result["confidence"]) == 4
    assert result["failure_counts"]["parse_failure"] == 1


def test_default_construction_warm_up_and_run_offline():
    judge = AnswerJudgeEvaluator()
    judge.warm_up()
    result = judge.run(ground_truth_answers=["Dollree Mapp", "12400"], predicted_answers=["Dolly Mapp", "12,400"])
    assert result["stages"] == [Stage.NO_EVIDENCE, Stage.CONTAINS]
    assert result["acceptance"][1] > result["acceptance"][0]
    assert result["confidence"] == [1 - result["acceptance"][0], result["acceptance"][1]]


def test_the_component_gives_the_command_lines_columns_rounded_alike():
    # One implementation: the component's outputs are AnswerJudgeCore's columns, confidence and
    # acceptance to 4 decimals as `answer-eval judge` writes them (the component once gave them unrounded).
    golds = [["Richard Nixon"], ["Dollree Mapp"], "12400", "NOT_IN_DOCUMENT"]
    predictions = ["Nixon", "Dolly Mapp", "12,400 units", "no idea"]
    questions = ["who resigned?", "who was the plaintiff?", "how many?", "what?"]
    result = AnswerJudgeEvaluator(escalate_below=0.9).run(golds, predictions, questions)
    columns = AnswerJudgeCore(JudgeOptions(escalate_below=0.9)).score(
        {"answers": golds, "prediction": predictions, "question": questions}
    )
    assert result["confidence"] == columns["confidence"]
    assert result["acceptance"] == columns["acceptance"]
    assert all(value == round(value, 4) for value in result["confidence"] + result["acceptance"])
    assert any(
        value != round(value, 6)
        for verdict in AnswerJudge().judge_batch(golds, predictions, questions)
        for value in (verdict.confidence, verdict.acceptance)
    )  # so the rounding is seen
    assert result["individual_scores"] == [int(correct) for correct in columns["correct"]]
    assert (result["stages"], result["evidence"]) == (columns["stage"], columns["evidence"])
    assert result["abstained"] == columns["abstained"]


def test_questions_input_and_bad_inputs():
    judge = AnswerJudgeEvaluator()
    result = judge.run(
        ground_truth_answers=["June 22, 1942"],
        predicted_answers=["It became law in 1942."],
        questions=["when did it become law to stand for the national anthem"],
    )
    assert result["individual_scores"] == [1]
    with pytest.raises(ValueError, match=r"questions must be a list of 1"):
        judge.run(ground_truth_answers=["a"], predicted_answers=["a"], questions=["q1", "q2"])
    with pytest.raises(ValueError, match="2 items but predicted_answers has 1"):
        judge.run(ground_truth_answers=["a", "b"], predicted_answers=["a"])
    with pytest.raises(ValueError, match="nothing to judge"):
        judge.run(ground_truth_answers=[], predicted_answers=[])


def test_run_async_and_serialisation():
    judge = AnswerJudgeEvaluator(extra_not_found_phrases=["keine Angabe"])
    data = judge.to_dict()
    assert not {"semantic", "model_path", "batch_size"} & set(data["init_parameters"])
    restored = AnswerJudgeEvaluator.from_dict(data)
    expected = judge.run(ground_truth_answers=["NOT_IN_DOCUMENT"], predicted_answers=["Keine Angabe."])
    assert (
        asyncio.run(restored.run_async(ground_truth_answers=["NOT_IN_DOCUMENT"], predicted_answers=["Keine Angabe."]))
        == expected
    )
    assert expected["individual_scores"] == [1]


def test_pipeline_dumps_loads_and_feeds_evaluation_run_result():
    pipeline = Pipeline()
    pipeline.add_component("judge", AnswerJudgeEvaluator())
    loaded = Pipeline.loads(pipeline.dumps())
    truths, predictions = ["Richard Nixon", "2579"], ["Nixon", "579"]
    result = loaded.run({"judge": {"ground_truth_answers": truths, "predicted_answers": predictions}})["judge"]
    report = EvaluationRunResult(
        "judge", {"ground_truth_answers": truths, "predicted_answers": predictions}, {"judge": result}
    )
    assert report.detailed_report(output_format="json")["judge"] == [1, 0]


def test_a_saved_judge_with_a_parameter_it_does_not_take_is_refused_naming_it():
    saved = AnswerJudgeEvaluator().to_dict()
    saved["init_parameters"]["semantic"] = True  # a stage removed before the package was published
    with pytest.raises(TypeError, match="semantic"):
        AnswerJudgeEvaluator.from_dict(saved)
    pipeline = Pipeline()
    pipeline.add_component("judge", AnswerJudgeEvaluator())
    data = pipeline.to_dict()
    data["components"]["judge"]["init_parameters"]["semantic"] = False
    with pytest.raises(DeserializationError, match="semantic"):
        Pipeline.from_dict(data)


def test_judge_options_with_a_key_that_is_not_an_option_are_refused_naming_it():
    from answer_eval.evaluators.judge.judge_options import JudgeOptions

    with pytest.raises(ValueError, match="unknown option 'semantic'; options: "):
        JudgeOptions.from_dict({**JudgeOptions().to_dict(), "semantic": False})


# ---- command line ----------------------------------------------------------------------------


def test_judge_cli(tmp_path):
    sample = tmp_path / "sample.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:30]), encoding="utf-8")
    out = tmp_path / "judged.jsonl"
    done = cli("judge", sample, "--output", out, "--format", "json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert summary["items"] == len(rows) == 30
    assert summary["correct"] == sum(r["correct"] for r in rows)
    assert {"confidence", "stage", "evidence", "failure_kind"} <= set(rows[0])
    expected = AnswerJudge().judge_batch(
        [r["answers"] for r in ROWS[:30]], [r["prediction"] for r in ROWS[:30]], [r["question"] for r in ROWS[:30]]
    )
    assert [r["correct"] for r in rows] == [v.correct for v in expected]


def test_agreement_cli(tmp_path):
    sample = tmp_path / "labelled.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:60]), encoding="utf-8")
    done = cli("agreement", sample, "--no-semantic", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    names = [row["evaluator"] for row in report["evaluators"]]
    assert names == ["AnswerExactMatchEvaluator (Haystack)", "AnswerContainsEvaluator", "AnswerJudgeEvaluator"]
    labels = [r["human_acceptable"] for r in ROWS[:60]]
    judged = AnswerJudge().judge_batch(
        [r["answers"] for r in ROWS[:60]], [r["prediction"] for r in ROWS[:60]], [r["question"] for r in ROWS[:60]]
    )
    expected = sum(v.correct == h for v, h in zip(judged, labels, strict=False)) / 60
    assert report["evaluators"][2]["agreement"] == pytest.approx(expected)


def test_agreement_cli_with_string_labels(tmp_path):
    rows = [
        {"question": "q", "answers": ["Paris"], "prediction": "Paris", "rating": "definitely_correct"},
        {"question": "q", "answers": ["Paris"], "prediction": "Lyon", "rating": "definitely_incorrect"},
    ]
    sample = tmp_path / "rated.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    base = ["agreement", sample, "--label-field", "rating", "--no-semantic"]
    refused = cli(*base)
    assert refused.returncode == 2
    assert "--positive" in refused.stderr
    assert ":1:" in refused.stderr
    done = cli(*base, "--positive", "definitely_correct", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert all(row["agreement"] == 1.0 for row in json.loads(done.stdout)["evaluators"])
