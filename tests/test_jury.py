"""A jury of judges: RubricEvaluator, PairwiseRubricEvaluator and the judge's escalation given a list of generators.

Two loopback servers that disagree, each behind Haystack's real OpenAIChatGenerator. The expected
consensus, confidence and agreement figures are worked out by hand in each test.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from haystack import Pipeline
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from answer_eval.llm.generators import GraderUnavailable
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerJudgeEvaluator,
    PairwiseRubricEvaluator,
    RubricEvaluator,
)
from tests.openai_server import OpenAIServer, Reply, escalation_candidate, last_user_text, texts_for_n
from tests.openai_server import grader_generator as generator
from tests.test_rubric_components import PAIRS, pairwise_script

ANSWERS = ["answer-0", "answer-1", "answer-2", "answer-3"]
INPUTS = {"predicted_answers": ANSWERS, "questions": ["q"] * 4, "contexts": ["c"] * 4}

# Each judge's two samples per answer (None: a reply that gives no score).
JUDGE_A = {"answer-0": [4, 4], "answer-1": [2, 3], "answer-2": [5, 5], "answer-3": [1, 1]}
JUDGE_B = {"answer-0": [4, 5], "answer-1": [2, 2], "answer-2": [3, 3], "answer-3": [None, None]}


def judge_script(samples):
    """A server grading each answer with the scripted scores, one per requested choice."""

    def script(request):
        text = last_user_text(request)
        answer = next(name for name in samples if name in text)
        return texts_for_n(
            request,
            lambda i: (
                "I cannot tell."
                if samples[answer][i] is None
                else json.dumps({"explanation": f"{answer} gets {samples[answer][i]}", "score": samples[answer][i]})
            ),
        )

    return script


def test_the_consensus_is_the_median_of_every_judges_samples_and_confidence_their_agreement():
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        jury = RubricEvaluator(chat_generator=[generator(first), generator(second)], samples=2)
        result = jury.run(**INPUTS)
        assert (first.requests, second.requests) == (4, 4)  # every judge grades every answer
    # answer-0: 4 4 | 4 5 -> 4 (3 of 4); answer-1: 2 3 | 2 2 -> 2 (3 of 4);
    # answer-2: 5 5 | 3 3 -> middle values 3 and 5, as frequent: the lower, 3 (2 of 4);
    # answer-3: 1 1 | unreadable -> 1 (2 of the 4 samples asked for).
    assert result["individual_scores"] == [4, 2, 3, 1]
    assert result["confidences"] == [0.75, 0.75, 0.5, 0.5]
    assert result["score"] == 2.5
    assert result["samples_used"] == [4, 4, 4, 2]
    assert result["failure_kinds"] == [None] * 4
    # Each judge's own consensus: judge A's answer-1 is 2 and 3, as frequent: the lower.
    assert result["judge_scores"] == [[4, 4], [2, 2], [5, 3], [1, None]]
    assert result["explanations"][0] == "answer-0 gets 4"
    assert result["explanations"][2].startswith("answer-2 gets 3")  # judge B's: its consensus is the panel's
    assert result["usage"]["calls"] == 8
    assert result["usage"]["prompt_tokens"] == 80  # the two servers' usage added up


def test_the_agreement_is_krippendorffs_ordinal_alpha_over_the_answers_every_judge_scored():
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        result = RubricEvaluator(chat_generator=[generator(first), generator(second)], samples=2).run(**INPUTS)
    # Units (4, 4), (2, 2), (5, 3); answer-3 is left out (judge B gave no score).
    # Value counts n2=2, n3=1, n4=2, n5=1, n=6. Observed: o35 = o53 = 1, ordinal d35 = (1+2+1 - (1+1)/2)^2 = 9,
    # so 18. Expected: sum over ordered pairs of n_c n_k d_ck = 2 * (2*2.25 + 4*9 + 2*20.25 + 2*2.25 + 1*9 + 2*2.25)
    # = 198. Alpha = 1 - (6 - 1) * 18 / 198 = 0.5455.
    assert result["judge_agreement"] == {"judges": 2, "items": 3, "level": "ordinal", "krippendorff_alpha": 0.5455}


def test_one_generator_gives_a_column_of_one_and_no_agreement():
    with OpenAIServer(judge_script(JUDGE_A)) as server:
        result = RubricEvaluator(chat_generator=generator(server), samples=2).run(**INPUTS)
    assert result["judge_scores"] == [[4], [2], [5], [1]]
    assert result["judge_agreement"] is None


def test_the_judges_run_at_once_not_one_after_another():
    second_asked = threading.Event()
    overlapped = []

    def waits_for_the_other(request):
        overlapped.append(second_asked.wait(10))  # False only if the second judge began after the first ended
        return json.dumps({"explanation": "fine", "score": 3})

    def tells(request):
        second_asked.set()
        return json.dumps({"explanation": "fine", "score": 3})

    with OpenAIServer(waits_for_the_other) as first, OpenAIServer(tells) as second:
        RubricEvaluator(chat_generator=[generator(first), generator(second)]).run(**INPUTS)
    assert overlapped
    assert all(overlapped)


def test_one_budget_is_shared_by_the_panel_and_buys_whole_panels():
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        jury = RubricEvaluator(chat_generator=[generator(first), generator(second)], samples=2, max_calls=3)
        result = jury.run(**INPUTS)
        asked = (first.requests, second.requests)
    # Eight requests wanted (four answers, two judges, one request of n=2 each); an answer costs the panel two.
    # Three buy the first answer's panel; the one left cannot buy the second's, so no judge is asked it.
    assert asked == (1, 1)
    assert result["usage"]["calls"] == 2
    assert result["failure_kinds"] == [None, "budget_stop", "budget_stop", "budget_stop"]
    assert result["judge_scores"] == [[4, 4], [None, None], [None, None], [None, None]]
    assert result["graded"] == 1
    assert "cannot buy this item's whole panel (2 requests, 2 judges)" in result["explanations"][1]


def test_a_judge_the_server_refuses_stops_the_run_naming_it():
    refused = lambda request: Reply(status=401, message="Incorrect API key provided")  # noqa: E731
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(refused) as second:
        jury = RubricEvaluator(chat_generator=[generator(first), generator(second)], samples=2)
        with pytest.raises(GraderUnavailable, match=r"judge 2: .*HTTP 401"):
            jury.run(**INPUTS)


def test_no_judge_graded_an_answer_fails_with_each_judges_reason():
    with OpenAIServer(lambda request: "no idea") as first, OpenAIServer(lambda request: "hmm") as second:
        result = RubricEvaluator(chat_generator=[generator(first), generator(second)]).run(
            predicted_answers=["x"], questions=["q"], contexts=["c"]
        )
    assert result["failure_kinds"] == ["parse_failure"]
    assert result["judge_scores"] == [[None, None]]
    assert result["explanations"][0].startswith("judge 1: reply not read")
    assert "judge 2: reply not read" in result["explanations"][0]
    assert result["judge_agreement"] == {"judges": 2, "items": 0, "level": "ordinal", "krippendorff_alpha": None}


def test_async_run_gives_the_same_grades():
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        jury = RubricEvaluator(chat_generator=[generator(first), generator(second)], samples=2)
        result = asyncio.run(jury.run_async(**INPUTS))
    assert result["individual_scores"] == [4, 2, 3, 1]
    assert result["judge_scores"] == [[4, 4], [2, 2], [5, 3], [1, None]]


def test_one_cache_file_serves_every_judge(tmp_path):
    cache = str(tmp_path / "replies.jsonl")
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        panel = [generator(first), generator(second)]
        before = RubricEvaluator(chat_generator=panel, samples=2, cache_path=cache).run(**INPUTS)
        asked = (first.requests, second.requests)
        again = RubricEvaluator(chat_generator=panel, samples=2, cache_path=cache).run(**INPUTS)
        # Nothing read is asked again, of either judge; only judge B's unreadable answer-3 (never cached).
        assert (first.requests, second.requests) == (asked[0], asked[1] + 1)
    assert again["individual_scores"] == before["individual_scores"]
    assert again["judge_scores"] == before["judge_scores"]
    assert again["usage"]["cache_hits"] == 14  # 8 of judge A's samples, 6 readable of judge B's


def test_a_jury_round_trips_through_a_saved_pipeline_and_its_signature_names_every_judge():
    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        pipeline = Pipeline()
        pipeline.add_component("jury", RubricEvaluator(chat_generator=[generator(first), generator(second)], samples=2))
        text = pipeline.dumps()
        loaded = Pipeline.loads(text)
        jury = loaded.get_component("jury")
        assert [judge.api_base_url for judge in jury.chat_generator] == [first.url, second.url]
        assert loaded.dumps() == text
        result = loaded.run({"jury": INPUTS})["jury"]
        urls = first.url, second.url
    assert result["individual_scores"] == [4, 2, 3, 1]
    signature = result["signature"]
    assert f'judge1.server:"{urls[0]}"' in signature
    assert f'judge2.server:"{urls[1]}"' in signature
    assert "judge1.model:grader" in signature
    assert "judge2.model:grader" in signature


def test_a_pairwise_jury_takes_the_majority_in_each_order_and_fleiss_kappa():
    with OpenAIServer(pairwise_script()) as fair, OpenAIServer(pairwise_script("A")) as biased:
        result = PairwiseRubricEvaluator(chat_generator=[generator(fair), generator(biased)]).run(**PAIRS)
        assert (fair.requests, biased.requests) == (4, 4)  # two pairs, both orders, each judge
    # The fair judge: CANDIDATE then BASELINE. The biased one always says A: its orders differ, a tie each time.
    assert result["judge_choices"] == [["CANDIDATE", "TIE"], ["BASELINE", "TIE"]]
    # Pair 1: shown candidate first, both judges say CANDIDATE; shown baseline first, one each: a tie.
    # The orders' consensus differ (CANDIDATE, TIE): the pair is a tie, not a flip; no sample said TIE.
    assert result["pairwise_choices"] == ["TIE", "TIE"]
    assert result["confidences"] == [0.0, 0.0]
    assert result["position_flips"] == 0
    # Fleiss' kappa of (CANDIDATE, TIE), (BASELINE, TIE): no item agrees (P = 0); shares 1/4, 1/2, 1/4
    # give Pe = 0.375; kappa = (0 - 0.375) / (1 - 0.375) = -0.6.
    assert result["judge_agreement"] == {"judges": 2, "items": 2, "fleiss_kappa": -0.6}


def test_two_fair_judges_agree_perfectly():
    with OpenAIServer(pairwise_script()) as first, OpenAIServer(pairwise_script()) as second:
        result = PairwiseRubricEvaluator(chat_generator=[generator(first), generator(second)]).run(**PAIRS)
    assert result["pairwise_choices"] == ["CANDIDATE", "BASELINE"]
    assert result["confidences"] == [1.0, 1.0]
    assert result["judge_agreement"] == {"judges": 2, "items": 2, "fleiss_kappa": 1.0}


class _Port:
    """Where a generator would send its requests (none is sent here)."""

    def __init__(self, port):
        self.url = f"http://127.0.0.1:{port}/v1"


def _offline(url="http://127.0.0.1:9/v1", model="grader"):
    return OpenAIChatGenerator(api_key=Secret.from_token("x"), api_base_url=url, model=model)


def test_a_bad_panel_is_refused_naming_what_is_wrong():
    with pytest.raises(ValueError, match="chat_generator is an empty list"):
        RubricEvaluator(chat_generator=[])
    with pytest.raises(TypeError, match=r"chat_generator\[1\] must be a Haystack chat generator, got str"):
        RubricEvaluator(chat_generator=[_offline(), "gpt-4o-mini"])
    with pytest.raises(ValueError, match="a list of one generator: give it alone"):
        PairwiseRubricEvaluator(chat_generator=[_offline()])
    with pytest.raises(ValueError, match=r"chat_generator\[1\] is the same generator as chat_generator\[0\]"):
        RubricEvaluator(chat_generator=[_offline(), _offline()])
    with pytest.raises(ValueError, match="'logprobs' weighs one generator's reply: a jury pools sampled grades"):
        RubricEvaluator(chat_generator=[_offline(), _offline(model="other")], scoring="logprobs")
    # Two models on one server are two judges.
    assert len(RubricEvaluator(chat_generator=[_offline(), _offline(model="other")]).chat_generator) == 2


# The judge's escalation to a jury: every answer escalated (escalate_below=1.0), three LLMs that disagree.
GOLDS = [["Richard Nixon"], ["Dollree Mapp"], ["December 14, 1972"], ["Paris"], ["Paris"]]
PREDICTIONS = ["Nixon", "Dolly Mapp", "14 December 1972", "Paris", "Lyon"]


def says_yes_to(*accepted):
    def script(request):
        candidate = escalation_candidate(last_user_text(request))
        return "Yes, the candidate is correct." if candidate in accepted else "No, it names someone else."

    return script


FIRST = says_yes_to("Nixon", "Dolly Mapp", "14 December 1972", "Paris")
SECOND = says_yes_to("Nixon", "Paris")
THIRD = says_yes_to("Nixon", "Dolly Mapp", "Paris", "Lyon")


def test_an_escalation_jury_decides_by_majority_and_reports_fleiss_kappa():
    with OpenAIServer(FIRST) as one, OpenAIServer(SECOND) as two, OpenAIServer(THIRD) as three:
        panel = [generator(one), generator(two), generator(three)]
        result = AnswerJudgeEvaluator(escalate_to=panel, escalate_below=1.0).run(
            ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS
        )
        assert (one.requests, two.requests, three.requests) == (5, 5, 5)
    assert result["llm_judge_verdicts"] == [
        [True, True, True],
        [True, False, True],
        [True, False, False],
        [True, True, True],
        [False, False, True],
    ]
    assert result["llm_verdicts"] == [True, True, False, True, False]
    assert result["individual_scores"] == [1, 1, 0, 1, 0]
    assert result["evidence"][1].startswith("LLM (yes): 2 of 3 judges: Yes")
    assert result["usage"]["calls"] == 15
    # Per answer P = 1, 1/3, 1/3, 1, 1/3 (mean 0.6); yes 10 of 15, so Pe = 4/9 + 1/9 = 5/9;
    # kappa = (3/5 - 5/9) / (4/9) = 0.1.
    assert result["llm_agreement"] == {"judges": 3, "items": 5, "fleiss_kappa": 0.1}


def test_two_escalation_judges_that_split_leave_the_judges_verdict():
    alone = AnswerJudgeEvaluator().run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS)
    with OpenAIServer(FIRST) as one, OpenAIServer(SECOND) as two:
        judge = AnswerJudgeEvaluator(escalate_to=[generator(one), generator(two)], escalate_below=1.0)
        result = asyncio.run(judge.run_async(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS))
    # Dolly Mapp and 14 December 1972: one yes, one no.
    for index in (1, 2):
        assert result["llm_verdicts"][index] is None
        assert result["llm_failures"][index] is None
        assert result["llm_explanations"][index] == "The judges split (1 yes, 1 no): the judge's verdict stands."
        assert result["individual_scores"][index] == alone["individual_scores"][index]
    assert result["llm_verdicts"][0] is True
    assert result["llm_verdicts"][4] is False


def test_an_escalation_jury_round_trips_and_one_judge_refused_stops_it():
    with OpenAIServer(FIRST) as one, OpenAIServer(SECOND) as two, OpenAIServer(THIRD) as three:
        pipeline = Pipeline()
        panel = [generator(one), generator(two), generator(three)]
        pipeline.add_component("judge", AnswerJudgeEvaluator(escalate_to=panel, escalate_below=1.0, max_calls=4))
        loaded = Pipeline.loads(pipeline.dumps())
        assert loaded.dumps() == pipeline.dumps()
        result = loaded.run({"judge": {"ground_truth_answers": GOLDS, "predicted_answers": PREDICTIONS}})["judge"]
        asked = (one.requests, two.requests, three.requests)
    assert asked == (1, 1, 1)  # one budget for the panel: four calls buy one answer's panel of three
    assert result["usage"]["calls"] == 3
    assert result["llm_failures"] == [None] + ["budget_stop"] * 4
    refused = lambda request: Reply(status=401, message="Incorrect API key provided")  # noqa: E731
    with OpenAIServer(FIRST) as one, OpenAIServer(refused) as two:
        judge = AnswerJudgeEvaluator(escalate_to=[generator(one), generator(two)], escalate_below=1.0)
        with pytest.raises(GraderUnavailable, match=r"judge 2: .*HTTP 401"):
            judge.run(ground_truth_answers=GOLDS, predicted_answers=PREDICTIONS)


def test_a_bad_escalation_panel_is_refused():
    with pytest.raises(ValueError, match="escalate_to is an empty list"):
        AnswerJudgeEvaluator(escalate_to=[])
    with pytest.raises(TypeError, match=r"escalate_to\[0\] must be a Haystack chat generator"):
        AnswerJudgeEvaluator(escalate_to=[None, _offline()])


def test_an_escalation_jury_is_refused_by_the_dask_engine_as_one_generator_is():
    from answer_eval.evaluators.registry import evaluator_of

    panel = [generator(_Port(9)), generator(_Port(10))]  # saved with their keys' variable names
    judge = AnswerJudgeEvaluator(escalate_to=panel, escalate_below=0.9)
    with pytest.raises(TypeError, match=r"escalate_to=\.\.\.\) hands work to a chat generator"):
        evaluator_of(judge)


# The budget buys whole panels, item by item (issue 38, point 6): before, the fastest judge spent it alone.
SAYS_NO = says_yes_to()
SAYS_YES = says_yes_to(*PREDICTIONS)
LYON = {"ground_truth_answers": [["Paris"]] * 4, "predicted_answers": ["Lyon", "Lyons", "Lyon city", "the Lyon"]}


@pytest.mark.parametrize("max_calls", [4, 5])
def test_an_escalation_budget_buys_whole_panels_not_one_judges_verdicts(max_calls):
    # Judge 1 says no, judges 2 and 3 say yes: a verdict of judge 1 alone would be the opposite of the panel's.
    yes = says_yes_to(*LYON["predicted_answers"])
    with OpenAIServer(SAYS_NO) as one, OpenAIServer(yes) as two, OpenAIServer(yes) as three:
        panel = [generator(one), generator(two), generator(three)]
        result = AnswerJudgeEvaluator(escalate_to=panel, escalate_below=1.0, max_calls=max_calls).run(**LYON)
        asked = (one.requests, two.requests, three.requests)
    assert asked == (1, 1, 1)  # the first answer's panel; what is left cannot buy the second's
    assert result["llm_judge_verdicts"] == [[False, True, True], [None] * 3, [None] * 3, [None] * 3]
    assert result["llm_verdicts"] == [True, None, None, None]
    assert result["llm_failures"] == [None, "budget_stop", "budget_stop", "budget_stop"]
    assert result["stages"][1:] != ["llm"] * 3  # the judge's own verdicts stand
    assert result["evidence"][0].startswith("LLM (yes): 2 of 3 judges: Yes")
    assert "cannot buy this item's whole panel (3 requests, 3 judges)" in result["llm_explanations"][1]
    assert result["usage"]["calls"] == 3


def test_an_escalation_budget_of_two_panels_decides_two_answers_each_by_all_three_judges():
    with OpenAIServer(SAYS_NO) as one, OpenAIServer(SAYS_YES) as two, OpenAIServer(SAYS_YES) as three:
        panel = [generator(one), generator(two), generator(three)]
        result = AnswerJudgeEvaluator(escalate_to=panel, escalate_below=1.0, max_calls=7).run(
            ground_truth_answers=GOLDS[:4], predicted_answers=PREDICTIONS[:4]
        )
    verdicts = result["llm_judge_verdicts"]
    assert [len([v for v in one if v is not None]) for one in verdicts] == [3, 3, 0, 0]
    assert result["llm_failures"] == [None, None, "budget_stop", "budget_stop"]


def score_server(score):
    return OpenAIServer(lambda request: json.dumps({"explanation": f"it gets {score}", "score": score}))


def test_a_rubric_budget_buys_whole_panels_so_no_grade_is_one_judges():
    with score_server(1) as one, score_server(5) as two, score_server(5) as three:
        jury = RubricEvaluator(chat_generator=[generator(one), generator(two), generator(three)], max_calls=5)
        result = jury.run(**INPUTS)
        asked = (one.requests, two.requests, three.requests)
    assert asked == (1, 1, 1)
    assert result["individual_scores"][0] == 5
    assert result["confidences"] == [0.6667, None, None, None]  # never 0.33: one judge's grade of three
    assert result["failure_kinds"] == [None, "budget_stop", "budget_stop", "budget_stop"]
    assert result["judge_scores"][1:] == [[None, None, None]] * 3
    assert result["explanations"][1].startswith("the panel was not finished within the budget (judge 1, judge 2")


def test_a_pairwise_budget_buys_both_orders_of_every_judge():
    with OpenAIServer(pairwise_script()) as fair, OpenAIServer(pairwise_script()) as other:
        # A pair costs each judge two requests (both orders): six buy one pair's panel of four, not a second.
        jury = PairwiseRubricEvaluator(chat_generator=[generator(fair), generator(other)], max_calls=6)
        result = jury.run(**PAIRS)
        asked = (fair.requests, other.requests)
    assert asked == (2, 2)
    assert result["pairwise_choices"] == ["CANDIDATE", None]
    assert result["failure_kinds"] == [None, "budget_stop"]
    assert result["judge_choices"] == [["CANDIDATE", "CANDIDATE"], [None, None]]


def test_a_retry_the_budget_cannot_pay_leaves_the_panel_unfinished_budget_stop():
    failed_once = threading.Event()

    def fails_once(request):
        if not failed_once.is_set():
            failed_once.set()
            return Reply(status=503, message="busy")
        return json.dumps({"explanation": "fine", "score": 2})

    with score_server(4) as steady, OpenAIServer(fails_once) as flaky:
        jury = RubricEvaluator(chat_generator=[generator(steady), generator(flaky)], max_calls=2, retry_backoff=0)
        result = jury.run(predicted_answers=["x"], questions=["q"], contexts=["c"])
        asked = (steady.requests, flaky.requests)
    assert asked == (1, 1)  # the panel's two; the retry would be a third
    assert result["failure_kinds"] == ["budget_stop"]
    assert result["judge_scores"] == [[4, None]]  # judge 1's grade is kept as its own, not as the panel's
    assert result["explanations"][0] == (
        "the panel was not finished within the budget (judge 1 gave 4; judge 2: the budget of 2 calls is spent)"
    )


def test_a_grade_of_part_of_the_panel_says_how_many_judges_gave_it():
    garbled = OpenAIServer(lambda request: "I would rather not say.")
    with score_server(4) as one, score_server(4) as two, garbled as three:
        result = RubricEvaluator(chat_generator=[generator(one), generator(two), generator(three)]).run(
            predicted_answers=["x"], questions=["q"], contexts=["c"]
        )
    assert result["individual_scores"] == [4]
    assert result["explanations"] == ["(Graded by 2 of 3 judges; none from judge 3: parse_failure.) it gets 4"]


def test_an_escalation_verdict_of_part_of_the_panel_says_so():
    garbled = OpenAIServer(lambda request: "Let me think about it.")
    with OpenAIServer(SAYS_YES) as one, OpenAIServer(SAYS_YES) as two, garbled as three:
        panel = [generator(one), generator(two), generator(three)]
        result = AnswerJudgeEvaluator(escalate_to=panel, escalate_below=1.0).run(
            ground_truth_answers=GOLDS[:1], predicted_answers=PREDICTIONS[:1]
        )
    assert result["llm_verdicts"] == [True]
    assert result["llm_explanations"][0].startswith("2 of 3 judges (no verdict from judge 3: parse_failure): Yes")


def test_a_panel_of_two_fallbacks_of_two_models_is_two_judges():
    from haystack.components.generators.chat import FallbackChatGenerator

    with OpenAIServer(judge_script(JUDGE_A)) as first, OpenAIServer(judge_script(JUDGE_B)) as second:
        panel = [FallbackChatGenerator([generator(first)]), FallbackChatGenerator([generator(second)])]
        result = RubricEvaluator(chat_generator=panel, samples=2).run(**INPUTS)
        assert (first.requests, second.requests) == (8, 8)  # not an OpenAI generator: one request a sample
    assert result["judge_scores"] == [[4, 4], [2, 2], [5, 3], [1, None]]
    with pytest.raises(ValueError, match=r"chat_generator\[1\] is the same generator as chat_generator\[0\]"):
        RubricEvaluator(chat_generator=[FallbackChatGenerator([_offline()]), FallbackChatGenerator([_offline()])])


def test_an_agreement_that_rounds_to_zero_is_written_0_never_minus_0():
    from answer_eval.evaluators.judge.escalation import verdicts_agreement
    from answer_eval.llm.jury import panel_agreement
    from answer_eval.stats.rater_agreement import fleiss_kappa, krippendorff_alpha

    # Panels whose agreement is a hair below 0 (float rounding, or a real -0.00003): rounded to 4 decimals they
    # were written "-0.0" in the outputs (judge_agreement, the judge's llm jury figure) and their JSON.
    choices = [["A", "TIE"], ["B", "TIE"], ["TIE", "TIE"], ["TIE", "B"], ["A", "TIE"], ["TIE", "B"], ["TIE", "A"]]
    choices += [["B", "B"], ["A", "TIE"], ["B", "B"], ["TIE", "TIE"], ["B", "B"], ["TIE", "B"]]
    scores = [[2, 3], [1, 4], [4, 2], [3, 5], [2, 4], [2, 3], [5, 4], [5, 4], [3, 4], [5, 5], [3, 1], [5, 3], [3, 4]]
    scores += [[1, 3], [2, 4], [1, 1], [3, 2], [3, 5], [1, 3], [1, 4], [4, 5], [1, 5], [2, 5], [1, 5], [5, 4]]
    scores += [[5, 3], [4, 5]]
    verdicts = [[True, True, True], [True, True, False], [False, False, True]]
    assert -1e-4 < fleiss_kappa(choices) < 0
    assert -1e-4 < krippendorff_alpha(scores, "ordinal") < 0
    assert -1e-4 < fleiss_kappa(verdicts) < 0
    figures = [
        panel_agreement(choices, True)["fleiss_kappa"],
        panel_agreement(scores, False)["krippendorff_alpha"],
        verdicts_agreement(verdicts)["fleiss_kappa"],
    ]
    assert json.dumps(figures) == "[0.0, 0.0, 0.0]"  # was "[-0.0, -0.0, -0.0]"


def test_a_judge_refused_after_its_first_answer_stops_the_whole_panel_never_leaving_one_judge_grading():
    # Judge 2's key is refused after one answer. The panel stops together: the items after the stop are error
    # for both judges (they were judge 1's alone, graded 10 of 10 as the panel's, and paid for).
    answered = {"count": 0}
    lock = threading.Lock()

    def grade(request):
        return json.dumps({"explanation": "ok", "score": 1})

    def refused_after_one(request):
        with lock:
            answered["count"] += 1
            first = answered["count"] == 1
        return grade(request) if first else Reply(status=401, message="bad key")

    with OpenAIServer(grade) as first, OpenAIServer(refused_after_one) as second:
        jury = RubricEvaluator(
            chat_generator=[generator(first), generator(second)], concurrency=1, progress_bar=False, structured="off"
        )
        answers = [f"answer {n}" for n in range(10)]
        result = jury.run(predicted_answers=answers, questions=["q?"] * 10, contexts=["c"] * 10)
        sent_to_first = len(first.bodies)
    assert result["failure_kinds"][0] is None  # both judges graded the first item
    assert result["graded"] < 10
    assert sent_to_first < 10  # judge 1 stopped with the panel
    stopped = [why for why, kind in zip(result["explanations"], result["failure_kinds"], strict=True) if kind]
    assert stopped
    assert all("not sent: the run stopped" in why or "401" in why for why in stopped)
    assert result["score"] is None  # 10 asked, a few graded: below min_graded_share
