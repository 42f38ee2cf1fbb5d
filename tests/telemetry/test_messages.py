"""Messages in the GenAI conventions' JSON shape, bounded without breaking JSON; OpenInference."""

from __future__ import annotations

import json

from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry import openinference
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.ids import DeterministicIds
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.spans import TraceBuilder
from tests import genai_shapes as shapes
from tests.telemetry.recordings import T0, named, root, run


def test_finish_reasons_map_to_the_schema_values() -> None:
    assert M.finish_reason("end_turn") == "stop"
    assert M.finish_reason("stop_sequence") == "stop"
    assert M.finish_reason("max_tokens") == "length"
    assert M.finish_reason("tool_use") == "tool_call"
    assert M.finish_reason("refusal") == "content_filter"
    assert M.finish_reason("end_turn", error=True) == "error"
    assert M.finish_reason("something_new") == "something_new"


def test_a_request_body_becomes_conventions_messages() -> None:
    request = {
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Bash", "description": "runs", "input_schema": {}}, {"bad": 1}],
        "messages": [
            {"role": "user", "content": "tidy up"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "text", "text": "ok"},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}],
            },
            {"role": "user", "content": [{"type": "image", "source": {}}]},
        ],
    }
    content = ContentPolicy(capture=True)
    sent = shapes.input_messages(content.render_list(M.request_messages(request["messages"])))
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert [p["type"] for p in sent[1]["parts"]] == ["reasoning", "text", "tool_call"]
    assert sent[1]["parts"][2] == {
        "type": "tool_call",
        "id": "t1",
        "name": "Bash",
        "arguments": {"command": "ls"},
    }
    assert sent[2]["parts"] == [{"type": "tool_call_response", "id": "t1", "response": "a.txt"}]
    assert sent[3]["parts"] == [{"type": "image"}]  # the schema's generic part
    system = shapes.system_instructions(
        content.render_list(M.system_instructions(request["system"]))
    )
    assert system == [{"type": "text", "content": "You are Claude Code."}]
    tools = shapes.tool_definitions(content.render_list(M.tool_definitions(request["tools"])))
    assert tools == [{"type": "function", "name": "Bash"}]


def test_truncation_keeps_valid_json_and_the_latest_messages() -> None:
    content = ContentPolicy(capture=True, limit=25)  # lists of at most 200 characters
    long = [M.user_text("x" * 50) for _ in range(20)] + [M.user_text("last")]
    rendered = content.render_list(long)
    messages = shapes.input_messages(rendered)
    assert messages[-1]["parts"][0]["content"] == "last"
    assert len(messages) == 2  # the oldest ones went first
    assert len(rendered or "") <= 200
    assert messages[0]["parts"][0]["content"] == "x" * 25 + "...[truncated 25 chars]"
    assert messages[0]["role"] == "user"  # structure is never cut
    assert ContentPolicy().render_list(long) is None  # capture off: nothing


def test_run_mode_chats_carry_the_conversation_and_the_response() -> None:
    builder = TraceBuilder(
        ids=DeterministicIds("c"),
        start_ns=T0,
        content=ContentPolicy(capture=True),
        prompt="say hi",
    )
    spans = run("partial-messages", builder=builder)
    first, second = sorted(named(spans, "chat "), key=lambda s: s.start_ns)
    assert shapes.input_messages(first.attributes[A.GEN_AI_INPUT_MESSAGES]) == [
        M.user_text("say hi")
    ]
    sent = shapes.input_messages(second.attributes[A.GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    call = sent[1]["parts"][-1]
    assert call["type"] == "tool_call" and call["arguments"]["command"] == "echo hi"
    assert sent[2]["parts"][0]["id"] == call["id"]
    (out,) = shapes.output_messages(second.attributes[A.GEN_AI_OUTPUT_MESSAGES])
    assert out["finish_reason"] == "stop"
    top = root(spans)
    (prompt,) = shapes.input_messages(top.attributes[A.GEN_AI_INPUT_MESSAGES])
    assert prompt == M.user_text("say hi")
    (answer,) = shapes.output_messages(top.attributes[A.GEN_AI_OUTPUT_MESSAGES])
    assert answer["parts"][0]["type"] == "text"
    tools = shapes.tool_definitions(top.attributes[A.GEN_AI_TOOL_DEFINITIONS])
    assert {"type": "function", "name": "Bash"} in tools
    (tool,) = named(spans, "execute_tool")
    assert shapes.arguments(tool.attributes[A.GEN_AI_TOOL_CALL_ARGUMENTS])["command"] == "echo hi"


def test_openinference_kinds_and_the_roots_input_and_output() -> None:
    builder = TraceBuilder(
        ids=DeterministicIds("o"),
        start_ns=T0,
        content=ContentPolicy(capture=True),
        prompt="say hi",
    )
    spans = [openinference.annotate(s) for s in run("partial-messages", builder=builder)]
    kinds = {s.name.split(" ")[0]: s.attributes[A.OPENINFERENCE_SPAN_KIND] for s in spans}
    assert kinds == {
        "invoke_agent": "AGENT",
        "turn": "CHAIN",
        "chat": "LLM",
        "execute_tool": "TOOL",
    }
    top = root(spans)
    assert top.attributes[A.INPUT_VALUE] == "say hi"
    assert top.attributes[A.INPUT_MIME_TYPE] == "text/plain"
    answer = json.loads(str(top.attributes[A.GEN_AI_OUTPUT_MESSAGES]))[0]["parts"][0]["content"]
    assert top.attributes[A.OUTPUT_VALUE] == answer
    assert top.attributes[A.SESSION_ID] == top.attributes[A.GEN_AI_CONVERSATION_ID]
    # without content capture: the kind only, never content
    plain = [openinference.annotate(s) for s in run("partial-messages")]
    assert all(A.INPUT_VALUE not in s.attributes for s in plain)
    compaction = SpanSpec("compaction", 1, 2, None, 0, 1)
    assert openinference.annotate(compaction).attributes[A.OPENINFERENCE_SPAN_KIND] == "CHAIN"
