"""The span model over real Claude Code 2.1.332 output (shared/reference recordings)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.telemetry import attributes as A
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.ids import DeterministicIds
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.spans import TraceBuilder
from gateway.types import Decision
from tests.telemetry.recordings import T0, children, messages, named, root, run


def test_partial_stream_one_chat_per_message_with_final_usage() -> None:
    spans = run("partial-messages")
    chats = named(spans, "chat ")
    assert [c.attributes[A.GEN_AI_RESPONSE_ID] for c in chats] == ["msg_0008", "msg_0009"]
    for chat, reason in zip(chats, ["tool_use", "end_turn"], strict=True):
        a = chat.attributes
        assert chat.name == "chat claude-opus-5-5"
        assert chat.kind == "client"
        assert a[A.GEN_AI_OPERATION_NAME] == "chat"
        assert a[A.GEN_AI_REQUEST_MODEL] == "claude-opus-5-5"
        assert a[A.GEN_AI_RESPONSE_MODEL] == "claude-opus-5-5"
        assert a[A.GEN_AI_USAGE_INPUT_TOKENS] == 1200
        assert a[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 42  # message_delta's, not message_start's 1
        assert a[A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 0
        assert a[A.GEN_AI_RESPONSE_FINISH_REASONS] == (reason,)
        assert a[A.GEN_AI_USAGE_COST] == pytest.approx(0.00564)
        assert a[A.CHAT_USAGE_SOURCE] == "stream"
    # ttft_ms moves the chat's start back to when the request went out
    assert chats[0].attributes[A.CHAT_TTFT_MS] == 10


def test_partial_stream_tree_and_cost_reconciliation() -> None:
    spans = run("partial-messages")
    top = root(spans)
    turns = children(spans, top)
    assert [t.name for t in turns] == ["turn", "turn"]
    assert [t.attributes[A.TURN_INDEX] for t in turns] == [1, 2]
    first = children(spans, turns[0])
    assert sorted(s.name for s in first) == ["chat claude-opus-5-5", "execute_tool Bash"]
    (tool,) = named(spans, "execute_tool")
    assert tool.attributes[A.GEN_AI_TOOL_CALL_ID] == "toolu_0008"
    assert tool.attributes[A.TOOL_SPLIT_COST_USD] == pytest.approx(0.00564)
    assert tool.attributes[A.TOOL_IS_ERROR] is False
    a = top.attributes
    assert a[A.RESULT_SUBTYPE] == "success"
    assert a[A.RESULT_NUM_TURNS] == 2 == len(turns)
    assert a[A.GEN_AI_CONVERSATION_ID] == "e017ca37-6c37-4a3f-b993-25b71f641f04"
    assert a[A.RESULT_TOTAL_COST_USD] == pytest.approx(0.01128)
    assert a[A.COST_CHAT_SUM_USD] == pytest.approx(0.01128)
    assert a[A.COST_DIFFERENCE_USD] == pytest.approx(0, abs=1e-12)
    assert a[A.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert top.status.code == "ok"
    assert spans[-1] is top  # the root comes last
    # every child ends inside the trace and every parent exists
    ids = {s.span_id for s in spans}
    assert all(s.parent_span_id in ids for s in spans if s is not top)
    assert all(s.trace_id == top.trace_id for s in spans)


def test_assistant_lines_without_partial_stream_give_one_chat_per_message_id() -> None:
    spans = run("tool-call")
    chats = named(spans, "chat ")
    assert [c.attributes[A.GEN_AI_RESPONSE_ID] for c in chats] == ["msg_0000", "msg_0001"]
    # without message_delta there is no exact output count: never report the placeholder
    assert all(A.GEN_AI_USAGE_OUTPUT_TOKENS not in c.attributes for c in chats)
    assert all(c.attributes[A.CHAT_USAGE_SOURCE] == "assistant_message" for c in chats)
    assert root(spans).attributes[A.COST_UNPRICED_CHATS] == 2


def _deny(b: TraceBuilder, msg: dict[str, Any], at: int) -> list[SpanSpec]:
    for block in (msg.get("message") or {}).get("content") or []:
        if msg["type"] == "assistant" and block.get("type") == "tool_use":
            decision = Decision("deny", rule_id="org.no-echo", reason="echo is forbidden")
            return b.on_pre_tool_use(block["id"], block["name"], decision, at + 1)
    return []


def test_hook_denied_tool_span_carries_the_decision_and_an_event_not_an_error() -> None:
    spans = run("hook-denied", before=_deny)
    (tool,) = named(spans, "execute_tool")
    a = tool.attributes
    assert tool.name == "execute_tool Bash"
    assert a[A.GEN_AI_TOOL_NAME] == "Bash"
    assert a[A.GEN_AI_TOOL_TYPE] == "function"
    assert a[A.POLICY_DECISION] == "deny"
    assert a[A.POLICY_RULE_ID] == "org.no-echo"
    assert a[A.POLICY_REASON] == "echo is forbidden"
    assert a[A.POLICY_WOULD_DENY] is False
    assert a[A.TOOL_IS_ERROR] is True
    assert a[A.TOOL_PERMISSION_DECISION] == "reject"
    # a deny is the gateway doing its job: no error status, no error.type, one event
    assert A.ERROR_TYPE not in a
    assert tool.status.code == "unset"
    (event,) = tool.events
    assert event.name == A.EVENT_POLICY_DENY
    assert event.attributes[A.POLICY_RULE_ID] == "org.no-echo"
    assert event.attributes[A.POLICY_REASON] == "echo is forbidden"
    assert tool.start_ns <= event.time_ns <= tool.end_ns
    top = root(spans)
    assert top.attributes[A.RESULT_PERMISSION_DENIALS] == 1
    assert top.status.code == "ok"


def test_monitor_mode_would_deny_is_not_an_error_by_itself() -> None:
    def monitor(b: TraceBuilder, msg: dict[str, Any], at: int) -> list[SpanSpec]:
        for block in (msg.get("message") or {}).get("content") or []:
            if msg["type"] == "assistant" and block.get("type") == "tool_use":
                decision = Decision("allow", rule_id="r1", reason="x", would_deny=True)
                return b.on_pre_tool_use(block["id"], block["name"], decision, at)
        return []

    spans = run("tool-call", before=monitor)
    (tool,) = named(spans, "execute_tool")
    assert tool.attributes[A.POLICY_WOULD_DENY] is True
    assert tool.status.code == "unset"


@pytest.mark.parametrize(
    ("name", "subtype", "terminal"),
    [
        ("max-turns-1", "error_max_turns", "max_turns"),
        ("max-budget", "error_max_budget_usd", "budget_exhausted"),
    ],
)
def test_error_results_set_error_status_on_root(name: str, subtype: str, terminal: str) -> None:
    spans = run(name)
    top = root(spans)
    assert top.status.code == "error"
    assert subtype in top.status.description
    assert top.attributes[A.RESULT_SUBTYPE] == subtype
    assert top.attributes[A.RESULT_IS_ERROR] is True
    assert top.attributes[A.RESULT_TERMINAL_REASON] == terminal
    assert top.attributes[A.RESULT_ERRORS]


def test_max_budget_tool_that_never_ran_is_closed_incomplete() -> None:
    spans = run("max-budget")
    (tool,) = named(spans, "execute_tool")
    assert tool.attributes[A.INCOMPLETE] is True


def test_manual_compaction_span() -> None:
    def archived(b: TraceBuilder, msg: dict[str, Any], at: int) -> list[SpanSpec]:
        if msg.get("status") == "compacting":
            return b.on_compact_archived("arch-123", None, at, trigger="manual")
        return []

    spans = run("manual-compact", before=archived)
    (comp,) = named(spans, "compaction")
    a = comp.attributes
    assert a[A.COMPACTION_TRIGGER] == "manual"
    assert a[A.COMPACTION_PRE_TOKENS] == 1242
    assert a[A.COMPACTION_POST_TOKENS] == 2588
    assert a[A.COMPACTION_RESULT] == "success"
    assert a[A.COMPACTION_ARCHIVE_ID] == "arch-123"
    assert comp.status.code == "unset"
    assert comp.parent_span_id == root(spans).span_id
    assert comp.end_ns > comp.start_ns


def test_failed_auto_compaction_is_an_error_span() -> None:
    spans = run("auto-compact-attempt")
    (comp,) = named(spans, "compaction")
    assert comp.status.code == "error"
    assert comp.attributes[A.COMPACTION_ERROR] == "too_few_groups"
    assert comp.attributes[A.COMPACTION_RESULT] == "failed"


def test_subagent_turns_nest_under_the_task_tool_span() -> None:
    spans = run("subagent-task")
    (task,) = [s for s in spans if s.name == "execute_tool Task"]
    assert task.attributes[A.TASK_STATUS] == "completed"
    # the subagent is an invoke_agent span inside the Task call, its turns inside it
    (agent,) = children(spans, task)
    assert agent.name == "invoke_agent general-purpose"
    assert agent.attributes[A.GEN_AI_OPERATION_NAME] == A.OP_INVOKE_AGENT
    assert agent.attributes[A.GEN_AI_AGENT_NAME] == "general-purpose"
    assert agent.attributes[A.GEN_AI_AGENT_ID] == "ae4e62fa21677f7ab"
    assert task.start_ns <= agent.start_ns <= agent.end_ns <= task.end_ns
    sub_turns = children(spans, agent)
    assert [t.name for t in sub_turns] == ["turn", "turn"]
    assert all(t.attributes[A.GEN_AI_AGENT_NAME] == "general-purpose" for t in sub_turns)
    sub_ids = {
        s.attributes.get(A.GEN_AI_RESPONSE_ID) for t in sub_turns for s in children(spans, t)
    }
    assert {"msg_bars_00003", "msg_bars_00004"} <= sub_ids
    (sub_bash,) = [s for s in spans if s.name == "execute_tool Bash"]
    assert sub_bash.parent_span_id == sub_turns[0].span_id
    # the Task span lasts until the background subagent finished
    assert task.end_ns >= max(t.end_ns for t in sub_turns)
    chats = named(spans, "chat ")
    assert len(chats) == 5 == len({c.attributes[A.GEN_AI_RESPONSE_ID] for c in chats})
    assert all(c.attributes[A.GEN_AI_USAGE_INPUT_TOKENS] == 1234 + 300 + 50 for c in chats)
    assert all(c.attributes[A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 300 for c in chats)
    assert all(c.attributes[A.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 50 for c in chats)


def test_two_results_in_one_stream_do_not_end_the_trace() -> None:
    spans = run("subagent-task")
    top = root(spans)
    assert spans[-1] is top
    assert top.attributes[A.RESULT_COUNT] == 2
    main_turns = [s for s in children(spans, top) if s.name == "turn"]
    assert len(main_turns) == 3 == top.attributes[A.RESULT_NUM_TURNS]
    final = children(spans, main_turns[-1])
    assert [c.attributes[A.GEN_AI_RESPONSE_ID] for c in final] == ["msg_bars_00005"]


def test_parallel_subagents_stay_apart() -> None:
    def line(kind: str, parent: str | None, **rest: Any) -> dict[str, Any]:
        return {"type": kind, "parent_tool_use_id": parent, "session_id": "s", **rest}

    def assistant(
        mid: str, parent: str | None, tool: tuple[str, str] | None = None
    ) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": "t"}]
        if tool:
            content.append({"type": "tool_use", "id": tool[0], "name": tool[1], "input": {}})
        return line(
            "assistant", parent, message={"id": mid, "model": "m", "content": content, "usage": {}}
        )

    def result_for(tool_id: str, parent: str | None) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": tool_id, "content": "ok", "is_error": False}
        return line("user", parent, message={"role": "user", "content": [block]})

    stream = [
        line(
            "assistant",
            None,
            message={
                "id": "m1",
                "model": "m",
                "usage": {},
                "content": [
                    {"type": "tool_use", "id": "A", "name": "Agent", "input": {}},
                    {"type": "tool_use", "id": "B", "name": "Agent", "input": {}},
                ],
            },
        ),
        assistant("a1", "A", ("a-bash", "Bash")),
        assistant("b1", "B", ("b-bash", "Bash")),
        result_for("b-bash", "B"),
        result_for("a-bash", "A"),
        assistant("a2", "A"),
        assistant("b2", "B"),
        result_for("A", None),
        result_for("B", None),
        assistant("m2", None),
        {"type": "result", "subtype": "success", "num_turns": 2, "session_id": "s"},
    ]
    b = TraceBuilder(ids=DeterministicIds("s"), start_ns=T0)
    spans: list[SpanSpec] = []
    for i, msg in enumerate(stream):
        spans += b.feed(msg, T0 + (i + 1) * 1000)
    spans += b.finish(T0 + 10**6)
    agent_spans = {
        s.attributes[A.GEN_AI_TOOL_CALL_ID]: s for s in named(spans, "execute_tool Agent")
    }
    for key in ("A", "B"):
        (subagent,) = children(spans, agent_spans[key])
        assert subagent.name.startswith("invoke_agent")
        turns = children(spans, subagent)
        assert len(turns) == 2
        inner = [c for t in turns for c in children(spans, t)]
        ids = {
            c.attributes.get(A.GEN_AI_RESPONSE_ID) or c.attributes.get(A.GEN_AI_TOOL_CALL_ID)
            for c in inner
        }
        assert ids == {f"{key.lower()}1", f"{key.lower()}2", f"{key.lower()}-bash"}


def test_content_is_off_by_default_and_truncated_when_on() -> None:
    plain = run("partial-messages")
    assert not any(
        k in s.attributes
        for s in plain
        for k in (A.GEN_AI_OUTPUT_MESSAGES, A.GEN_AI_TOOL_CALL_ARGUMENTS, A.GEN_AI_INPUT_MESSAGES)
    )
    builder = TraceBuilder(
        ids=DeterministicIds("c"),
        start_ns=T0,
        content=ContentPolicy(capture=True, limit=4),
        prompt="say hi please, now",
    )
    spans = run("partial-messages", builder=builder)
    (tool,) = named(spans, "execute_tool")
    # truncated inside the structure: still JSON, still an object
    arguments = json.loads(str(tool.attributes[A.GEN_AI_TOOL_CALL_ARGUMENTS]))
    assert arguments["command"] == "echo...[truncated 3 chars]"
    assert tool.attributes[A.GEN_AI_TOOL_CALL_RESULT] == "hi"
    (prompt,) = json.loads(str(root(spans).attributes[A.GEN_AI_INPUT_MESSAGES]))
    cut = "say ...[truncated 14 chars]"
    assert prompt == {"role": "user", "parts": [{"type": "text", "content": cut}]}
    chat = named(spans, "chat ")[0]
    (output,) = json.loads(str(chat.attributes[A.GEN_AI_OUTPUT_MESSAGES]))
    assert output["role"] == "assistant" and output["finish_reason"] == "tool_call"
    assert [p["type"] for p in output["parts"]] == ["text", "tool_call"]


def test_pre_tool_use_sets_the_tool_span_start_and_post_tool_use_its_end() -> None:
    b = TraceBuilder(ids=DeterministicIds("x"), start_ns=T0)
    msgs = messages("partial-messages")
    spans: list[SpanSpec] = []
    at = T0
    for msg in msgs:
        at += 1000
        if msg["type"] == "user":
            spans += b.on_pre_tool_use(
                "toolu_0008", "Bash", Decision("allow", rule_id="ok"), at - 500
            )
            spans += b.on_post_tool_use("toolu_0008", False, at - 100)
        spans += b.feed(msg, at)
    spans += b.finish(at)
    (tool,) = named(spans, "execute_tool")
    assert tool.end_ns - tool.start_ns == 400
    assert tool.attributes[A.POLICY_DECISION] == "allow"


def test_finish_without_result_marks_root_incomplete_error() -> None:
    b = TraceBuilder(ids=DeterministicIds("x"), start_ns=T0)
    spans = b.feed(messages("tool-call")[1], T0 + 5)
    spans += b.finish(T0 + 10)
    top = root(spans)
    assert top.status.code == "error"
    assert top.attributes[A.INCOMPLETE] is True
    assert b.finish(T0 + 20) == []
