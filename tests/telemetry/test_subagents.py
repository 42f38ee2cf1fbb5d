"""Subagent chats: final usage from the subagent transcript (the partial stream never has it).

subagent-transcript.jsonl is a real Claude Code 2.1.332 subagent transcript (the e2e subagent
scenario: scripted usage 1911/91/191/19 with tool_use, then 2111/22/211/21 with end_turn),
trimmed of long fields, ending in a half-written line.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from gateway.runner.tracer import read_subagent_usage
from gateway.telemetry import attributes as A
from gateway.telemetry.ids import DeterministicIds
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.pricing import Usage, load_price_table
from gateway.telemetry.spans import TraceBuilder
from gateway.telemetry.subagents import FinalUsage, final_usage_by_message_id, subagents_dir
from tests.telemetry.recordings import T0, children, named, root

TRANSCRIPT = Path(__file__).parent / "subagent-transcript.jsonl"
MODEL = "claude-opus-5-5"
TASK = "toolu_0000_0"
SUB_BASH = "toolu_0002_0"


def transcript_lines() -> list[str]:
    return TRANSCRIPT.read_text().splitlines()


# --- the parser --------------------------------------------------------------------------------


def test_real_transcript_gives_final_usage_and_stop_reason_per_message_id() -> None:
    found = final_usage_by_message_id(transcript_lines())
    assert found == {
        "msg_0002": FinalUsage(
            Usage(
                input_tokens=1911,
                output_tokens=91,
                cache_read_input_tokens=191,
                cache_creation_input_tokens=19,
                cache_creation_5m_input_tokens=19,
                cache_creation_1h_input_tokens=0,
            ),
            "tool_use",
            MODEL,
        ),
        "msg_0003": FinalUsage(
            Usage(
                input_tokens=2111,
                output_tokens=22,
                cache_read_input_tokens=211,
                cache_creation_input_tokens=21,
                cache_creation_5m_input_tokens=21,
                cache_creation_1h_input_tokens=0,
            ),
            "end_turn",
            MODEL,
        ),
    }


def entry(message_id: Any, usage: Any, stop: Any = None, kind: str = "assistant") -> str:
    message = {"id": message_id, "model": MODEL, "usage": usage, "stop_reason": stop}
    return json.dumps({"type": kind, "isSidechain": True, "message": message})


def test_last_entry_per_message_id_wins_and_the_1h_split_is_kept() -> None:
    final = {
        "input_tokens": 5,
        "output_tokens": 77,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 30,
        "cache_creation": {"ephemeral_5m_input_tokens": 10, "ephemeral_1h_input_tokens": 20},
    }
    lines = [entry("m1", {"input_tokens": 5, "output_tokens": 1}), entry("m1", final, "max_tokens")]
    (got,) = final_usage_by_message_id(lines).values()
    assert got.usage.output_tokens == 77
    assert got.usage.cache_creation_5m_input_tokens == 10
    assert got.usage.cache_creation_1h_input_tokens == 20
    assert got.stop_reason == "max_tokens"


def test_malformed_and_foreign_lines_are_skipped() -> None:
    good = entry("m1", {"input_tokens": 3, "output_tokens": 4}, "end_turn")
    lines: list[str | bytes] = [
        "",
        "   ",
        "not json",
        "[1, 2]",
        '"a string"',
        '{"type": "assistant"}',
        '{"type": "assistant", "message": "text"}',
        entry(None, {"output_tokens": 9}),
        entry("", {"output_tokens": 9}),
        entry(7, {"output_tokens": 9}),
        entry("m2", "no usage object"),
        entry("m3", {"output_tokens": 9}, kind="user"),
        b"\xff\xfe not utf-8",
        good.encode(),
        good[: len(good) // 2],
    ]
    found = final_usage_by_message_id(lines)
    assert list(found) == ["m1"]
    assert found["m1"].usage == Usage(input_tokens=3, output_tokens=4)
    assert found["m1"].stop_reason == "end_turn"


def test_subagents_dir_from_the_session_or_a_subagent_transcript_path() -> None:
    main = "/h/.claude/projects/-srv/0d5.jsonl"
    assert str(subagents_dir(main)) == "/h/.claude/projects/-srv/0d5/subagents"
    sub = "/h/.claude/projects/-srv/0d5/subagents/agent-a1.jsonl"
    assert str(subagents_dir(sub)) == "/h/.claude/projects/-srv/0d5/subagents"


# --- the shell's reader ------------------------------------------------------------------------


def test_reader_takes_only_agent_transcripts_and_skips_unreadable_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    main = tmp_path / "sess.jsonl"
    main.write_text(entry("main-msg", {"output_tokens": 5}) + "\n")
    sub = tmp_path / "sess" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-a1.jsonl").write_text(TRANSCRIPT.read_text())
    (sub / "agent-a2.jsonl").write_text(entry("msg_x", {"output_tokens": 8}, "end_turn") + "\n")
    (sub / "agent-a1.meta.json").write_text('{"toolUseId": "toolu_0000_0"}')
    (sub / "other.jsonl").write_text(entry("msg_other", {"output_tokens": 8}) + "\n")
    (sub / "agent-bad.jsonl").mkdir()  # unreadable as a file
    with caplog.at_level(logging.WARNING, logger="gateway.telemetry"):
        found = read_subagent_usage(str(main))
    assert sorted(found) == ["msg_0002", "msg_0003", "msg_x"]
    assert "agent-bad.jsonl" in caplog.text
    assert read_subagent_usage("") == {}
    assert read_subagent_usage(str(tmp_path / "missing.jsonl")) == {}


# --- the builder -------------------------------------------------------------------------------


def _usage(inp: int, out: int, read: int, write: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
    }


def _line(kind: str, parent: str | None = None, **rest: Any) -> dict[str, Any]:
    return {"type": kind, "parent_tool_use_id": parent, "session_id": "s1", **rest}


def _event(event: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
    return _line("stream_event", parent, event=event)


def _assistant(mid: str, parent: str | None, block: dict[str, Any]) -> dict[str, Any]:
    # as the stream carries a subagent's response: message_start's placeholder usage
    message = {
        "id": mid,
        "model": MODEL,
        "content": [block],
        "stop_reason": None,
        "usage": _usage(0, 1, 0, 0) if parent is None else _usage(*SUB_START[mid]),
    }
    return _line("assistant", parent, message=message)


def _tool_result(tool_use_id: str, parent: str | None) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": "ok", "is_error": False}
    return _line("user", parent, message={"role": "user", "content": [block]})


MAIN_USAGE = (1811, 81, 181, 18)
SUB_START = {"msg_0002": (1911, 1, 191, 19), "msg_0003": (2111, 1, 211, 21)}
SUB_FINAL = {"msg_0002": (1911, 91, 191, 19), "msg_0003": (2111, 22, 211, 21)}


def _price(u: tuple[int, int, int, int]) -> float:
    cost = load_price_table().cost(MODEL, Usage(*u))
    assert cost is not None
    return cost


def _stream() -> list[dict[str, Any]]:
    """A main chat (partial stream) that starts a Task; the subagent's two responses arrive
    only as `assistant` lines with placeholder usage, like Claude Code 2.1.332 sends them."""
    task = {"type": "tool_use", "id": TASK, "name": "Task", "input": {}}
    total = _price(MAIN_USAGE) + sum(_price(u) for u in SUB_FINAL.values())
    start = {"id": "msg_0000", "model": MODEL, "usage": _usage(1811, 1, 181, 18)}
    return [
        _line("system", subtype="init", model=MODEL),
        _event({"type": "message_start", "message": start}),
        _event({"type": "content_block_start", "index": 0, "content_block": task}),
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": _usage(*MAIN_USAGE),
            }
        ),
        _event({"type": "message_stop"}),
        _assistant("msg_0000", None, task),
        _line("system", subtype="task_started", tool_use_id=TASK, task_id="t1"),
        _tool_result(TASK, None),
        _assistant("msg_0002", TASK, {"type": "text", "text": "Calling Bash."}),
        _assistant(
            "msg_0002", TASK, {"type": "tool_use", "id": SUB_BASH, "name": "Bash", "input": {}}
        ),
        _tool_result(SUB_BASH, TASK),
        _assistant("msg_0003", TASK, {"type": "text", "text": "Two done."}),
        _line("system", subtype="task_notification", tool_use_id=TASK, status="completed"),
        _line("result", subtype="success", num_turns=2, total_cost_usd=total),
    ]


def _feed(builder: TraceBuilder) -> list[SpanSpec]:
    out: list[SpanSpec] = []
    for i, msg in enumerate(_stream()):
        out += builder.feed(msg, T0 + (i + 1) * 1_000_000)
    return out


def _sub_spans(spans: list[SpanSpec]) -> list[SpanSpec]:
    """The subagent's chats, tools and turns (its invoke_agent span holds no usage)."""
    return [
        s
        for s in spans
        if s.attributes.get(A.PARENT_TOOL_USE_ID) == TASK
        and s.attributes.get(A.GEN_AI_OPERATION_NAME) != A.OP_INVOKE_AGENT
    ]


def test_subagent_chats_wait_for_the_transcript_then_are_exact_and_priced() -> None:
    b = TraceBuilder(ids=DeterministicIds("sub"), start_ns=T0)
    streamed = _feed(b)
    # held: no subagent chat, tool or turn left before their final usage is known
    assert _sub_spans(streamed) == []
    (task,) = named(streamed, "execute_tool Task")
    completed = b.complete_from_transcripts(final_usage_by_message_id(transcript_lines()))
    # the held chat is emitted now; the subagent's last one is still current until finish
    assert [s.attributes.get(A.GEN_AI_RESPONSE_ID) for s in named(completed, "chat ")] == [
        "msg_0002"
    ]
    finished = b.finish(T0 + 10**9)
    spans = streamed + completed + finished
    sub_chats = [s for s in _sub_spans(completed + finished) if s.name.startswith("chat ")]
    assert [c.attributes[A.GEN_AI_RESPONSE_ID] for c in sub_chats] == ["msg_0002", "msg_0003"]
    for chat, reason in zip(sub_chats, ["tool_use", "end_turn"], strict=True):
        a = chat.attributes
        mid = str(a[A.GEN_AI_RESPONSE_ID])
        inp, out, read, write = SUB_FINAL[mid]
        assert a[A.CHAT_USAGE_SOURCE] == "transcript"
        assert a[A.GEN_AI_USAGE_OUTPUT_TOKENS] == out
        assert a[A.GEN_AI_USAGE_INPUT_TOKENS] == inp + read + write
        assert a[A.GEN_AI_RESPONSE_FINISH_REASONS] == (reason,)
        assert a[A.GEN_AI_USAGE_COST] == pytest.approx(_price(SUB_FINAL[mid]))
        assert a[A.CHAT_CACHE_CREATION_5M_INPUT_TOKENS] == write
    # the subagent's Bash span comes with its chat, its turns nest under the Task span
    (bash,) = named(completed, "execute_tool Bash")
    assert bash.attributes[A.TOOL_SPLIT_COST_USD] == pytest.approx(_price(SUB_FINAL["msg_0002"]))
    (agent,) = children(spans, task)
    assert agent.attributes[A.GEN_AI_OPERATION_NAME] == A.OP_INVOKE_AGENT
    sub_turns = children(spans, agent)
    assert [t.name for t in sub_turns] == ["turn", "turn"]
    assert all(task.start_ns <= t.start_ns and t.end_ns <= task.end_ns for t in sub_turns)
    assert all(agent.start_ns <= t.start_ns and t.end_ns <= agent.end_ns for t in sub_turns)
    # the held chats keep the times they had in the stream, not the end of the run
    assert max(c.end_ns for c in sub_chats) < task.end_ns
    top = root(spans)
    assert top.attributes[A.COST_UNPRICED_CHATS] == 0
    assert top.attributes[A.COST_DIFFERENCE_USD] == pytest.approx(0, abs=1e-12)
    assert len(named(spans, "chat ")) == 3 == len({s.span_id for s in named(spans, "chat ")})
    assert b.complete_from_transcripts({}) == []


def test_without_transcripts_finish_emits_held_chats_unpriced() -> None:
    b = TraceBuilder(ids=DeterministicIds("sub"), start_ns=T0)
    spans = _feed(b) + b.finish(T0 + 10**9)
    sub_chats = [s for s in _sub_spans(spans) if s.name.startswith("chat ")]
    assert len(sub_chats) == 2
    for chat in sub_chats:
        assert chat.attributes[A.CHAT_USAGE_SOURCE] == "assistant_message"
        assert A.GEN_AI_USAGE_OUTPUT_TOKENS not in chat.attributes
        assert A.GEN_AI_USAGE_COST not in chat.attributes
        assert chat.end_ns < T0 + 10**9
    assert len(named(spans, "execute_tool Bash")) == 1
    top = root(spans)
    assert top.attributes[A.COST_UNPRICED_CHATS] == 2
    assert A.COST_DIFFERENCE_USD not in top.attributes


def test_a_transcript_missing_one_response_leaves_only_that_one_unpriced() -> None:
    b = TraceBuilder(ids=DeterministicIds("sub"), start_ns=T0)
    streamed = _feed(b)
    final = final_usage_by_message_id(transcript_lines())
    completed = b.complete_from_transcripts({"msg_0002": final["msg_0002"]})
    assert [s.attributes.get(A.GEN_AI_RESPONSE_ID) for s in named(completed, "chat ")] == [
        "msg_0002"
    ]
    spans = streamed + completed + b.finish(T0 + 10**9)
    (late,) = [s for s in named(spans, "chat ") if s.attributes[A.GEN_AI_RESPONSE_ID] == "msg_0003"]
    assert late.attributes[A.CHAT_USAGE_SOURCE] == "assistant_message"
    assert root(spans).attributes[A.COST_UNPRICED_CHATS] == 1


def test_usage_handed_over_before_the_chat_is_held_is_used_when_it_ends() -> None:
    b = TraceBuilder(ids=DeterministicIds("sub"), start_ns=T0)
    assert b.complete_from_transcripts(final_usage_by_message_id(transcript_lines())) == []
    spans = _feed(b)
    sub_chats = [s for s in _sub_spans(spans) if s.name.startswith("chat ")]
    assert [c.attributes[A.GEN_AI_USAGE_OUTPUT_TOKENS] for c in sub_chats] == [91]  # msg_0002
    spans += b.finish(T0 + 10**9)
    assert root(spans).attributes[A.COST_UNPRICED_CHATS] == 0
