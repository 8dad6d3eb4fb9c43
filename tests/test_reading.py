import pytest
from haystack import Pipeline
from haystack.components.agents import Agent
from haystack.components.builders import AnswerBuilder
from haystack.dataclasses import ChatMessage, ExtractedAnswer, GeneratedAnswer

from answer_eval import read_output
from tests.scripted import ScriptedChatGenerator


def test_a_string_is_the_answer():
    output = read_output("Paris")
    assert (output.text, output.source) == ("Paris", "str")


def test_a_plain_string_reads_as_a_str_subclass_does():
    # Plain strings take a short path; a subclass takes the general one. Both must agree.
    class Text(str):
        pass

    for text in ("Paris", "", " I cannot answer that. ", "x" * 1000):
        assert read_output(text) == read_output(Text(text))
        assert type(read_output(Text(text)).text) is str


def test_generated_answer_text_and_meta_flags():
    answer = GeneratedAnswer(
        data="The plant opened in", query="q", documents=[], meta={"partial": True, "notes": ["cost_cap_reached"]}
    )
    output = read_output(answer)
    assert output.text == "The plant opened in"
    assert output.source == "GeneratedAnswer"
    assert output.limit_stopped


def test_extracted_answer_is_read_like_a_generated_one():
    output = read_output(ExtractedAnswer(query="q", score=0.9, data="Lisbon"))
    assert (output.text, output.source) == ("Lisbon", "ExtractedAnswer")


@pytest.mark.parametrize(
    ("reason", "stopped", "refused"),
    [("stop", False, False), ("length", True, False), ("content_filter", False, True), ("refusal", False, True)],
)
def test_chat_message_finish_reason_is_a_trace_step(reason, stopped, refused):
    output = read_output(ChatMessage.from_assistant("text", meta={"finish_reason": reason}))
    assert output.text == "text"
    assert output.finish_reasons == (reason,)
    assert output.limit_stopped is stopped
    assert output.was_refused is refused


def test_chat_message_with_only_a_tool_call_has_no_text():
    from haystack.dataclasses import ToolCall

    message = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="search", arguments={"q": "x"})])
    assert read_output(message).text is None


def test_generator_output_from_a_real_pipeline_reads_the_first_reply():
    pipeline = Pipeline()
    pipeline.add_component("llm", ScriptedChatGenerator(["Lisbon, Portugal.", "Porto."], finish_reason="length"))
    result = pipeline.run({"llm": {"messages": [ChatMessage.from_user("Where?")]}})
    output = read_output(result["llm"])
    assert output.text == "Lisbon, Portugal."
    assert output.limit_stopped


def test_raw_generator_mapping_with_meta_list():
    output = read_output({"replies": ["Three."], "meta": [{"finish_reason": "content_filter"}]})
    assert output.text == "Three."
    assert output.was_refused


def test_answer_builder_output_reads_the_first_answer_with_reply_meta():
    pipeline = Pipeline()
    pipeline.add_component("llm", ScriptedChatGenerator(["It is 1,991 m long."], finish_reason="length"))
    pipeline.add_component("builder", AnswerBuilder())
    pipeline.connect("llm.replies", "builder.replies")
    result = pipeline.run(
        {"llm": {"messages": [ChatMessage.from_user("How long?")]}, "builder": {"query": "How long?"}}
    )
    answers = result["builder"]
    assert isinstance(answers["answers"][0], GeneratedAnswer)
    for form in (answers, answers["answers"][0]):
        output = read_output(form)
        assert output.text == "It is 1,991 m long."
        assert output.limit_stopped  # AnswerBuilder copies the reply's finish_reason into the answer's meta


def test_real_agent_result_reads_the_last_assistant_message():
    agent = Agent(chat_generator=ScriptedChatGenerator(["The bridge is 1,991 m long."]))
    agent.warm_up()
    result = agent.run(messages=[ChatMessage.from_user("How long is the bridge?")])
    output = read_output(result)
    assert output.text == "The bridge is 1,991 m long."
    assert not output.limit_stopped


def test_agent_step_limit_is_a_limit_stop():
    output = read_output(
        {"messages": [ChatMessage.from_assistant("Still searching")], "exit_reason": "max_agent_steps"}
    )
    assert output.limit_stopped


def test_openai_style_message_dicts():
    output = read_output(
        {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "A."},
                {"role": "tool", "content": "x"},
            ]
        }
    )
    assert output.text == "A."


def test_messages_without_an_assistant_have_no_text():
    assert read_output({"messages": [ChatMessage.from_user("q")]}).text is None


def test_mapping_with_answer_or_text_and_flags():
    output = read_output(
        {
            "answer": "partial",
            "partial": True,
            "notes": "call_cap_reached",
            "trace": [{"finish_reason": "stop"}, {"meta": {"finish_reason": "content_filter"}}],
            "failure_kind": "timeout",
        }
    )
    assert output.text == "partial"
    assert output.notes == ("call_cap_reached",)
    assert output.finish_reasons == ("stop", "content_filter")
    assert output.limit_stopped
    assert output.was_refused
    assert output.failure_kind == "timeout"
    assert read_output({"text": "t"}).text == "t"


def test_a_partial_answer_without_a_limit_note_is_not_a_limit_stop():
    assert not read_output({"answer": "x", "partial": True, "notes": ["user cancelled"]}).limit_stopped
    assert not read_output({"answer": "x", "notes": ["cost_cap_reached"]}).limit_stopped


@pytest.mark.parametrize(
    "value",
    [
        ValueError("boom"),
        {"error": "TimeoutError: 30 s"},
        {"answer": "Paris", "status": "error"},
        {"answer": "x", "error": RuntimeError("gpu")},
    ],
)
def test_failed_results_carry_an_error(value):
    assert read_output(value).error


@pytest.mark.parametrize("value", [{"error": None}, {"error": ""}, {"error": False}, {"status": "ok"}])
def test_empty_error_fields_are_not_errors(value):
    assert read_output(value).error is None


def test_refused_result():
    assert read_output({"answer": "x", "status": "refused"}).was_refused
    assert read_output({"answer": "x", "refused": True}).was_refused


def test_a_list_of_strings_is_joined():
    assert read_output(["Bobby Scott", "Bob Russell"]).text == "Bobby Scott; Bob Russell"


class Hostile:
    def __getattr__(self, name):
        raise RuntimeError("no attributes for you")


@pytest.mark.parametrize(
    "make",
    [
        lambda: None,
        lambda: 42,
        lambda: 4.2,
        lambda: b"bytes",
        object,
        list,
        lambda: [1, 2],
        lambda: {"other": 1},
        lambda: {"replies": []},
        Hostile,
        lambda: {1, 2},
    ],
)
def test_anything_else_carries_no_text_and_never_raises(make):
    assert read_output(make()).text is None


def test_self_referencing_mapping_stops():
    looped: dict = {}
    looped["answer"] = looped
    assert read_output(looped).text is None
