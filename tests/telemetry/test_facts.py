"""The fact layer both vantage points feed: the same facts, told in any order, make the same
spans, each once; what never completes is closed at the end, marked incomplete."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from gateway.telemetry import attributes as A
from gateway.telemetry.chat import ChatAccumulator, ChatRequestMeta
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.fact_state import MemoryTraceState
from gateway.telemetry.facts import TraceFacts
from gateway.telemetry.ids import DeterministicIds
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.pricing import load_price_table
from gateway.telemetry.tree import Tree
from gateway.types import Decision

S = "session-1"
ALLOW = Decision(kind="allow", rule_id="p.yaml:allow[0]")


def response(message_id: str, *tool_ids: str, text: str = "") -> ChatAccumulator:
    acc = ChatAccumulator()
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": t, "name": "Bash", "input": {"command": "ls"}}
                for t in tool_ids]
    acc.apply_message({"id": message_id, "content": content,
                       "usage": {"input_tokens": 10, "output_tokens": 2}})
    return acc


class Harness:
    def __init__(self, *, capture: bool, retry: bool) -> None:
        self.spans: list[SpanSpec] = []
        self.later: list[Callable[[], None]] = []
        tree = Tree(DeterministicIds(S), prices=load_price_table(),
                    content=ContentPolicy(capture=capture), session_id=S)
        self.facts = TraceFacts(
            MemoryTraceState(), ContentPolicy(capture=capture), tree=lambda _: tree,
            export=self.spans.append,
            retry=(lambda _delay, job: self.later.append(job)) if retry else None,
        )
        self.root_id = tree.root_id

    def run_later(self) -> None:
        """The retries queued so far, once each (a retry may queue another)."""
        due, self.later = self.later, []
        for job in due:
            job()

    def by_name(self) -> dict[str, SpanSpec]:
        names = [s.name for s in self.spans]
        assert len(names) == len(set(names)), f"a span made twice: {names}"
        return {s.name: s for s in self.spans}


STEPS = ("response", "result", "end")


def tell(h: Harness, step: str) -> None:
    if step == "response":
        meta = ChatRequestMeta(100, 200, "claude-opus-4-1", None, None)
        h.facts.response_ended(S, "", "claude-opus-4-1", response("m1", "t1"), meta, 0.5)
    elif step == "result":
        h.facts.result_known(S, "t1", [{"type": "text", "text": "a.txt"}])
    else:
        h.facts.end_tool(S, {"tool_use_id": "t1"}, None, failed=False, end_ns=400)


@pytest.mark.parametrize("retry", [False, True], ids=["run", "serve"])
@pytest.mark.parametrize("order", list(itertools.permutations(STEPS)), ids="-".join)
def test_any_order_of_the_facts_makes_the_same_tool_and_turn(
    order: tuple[str, ...], retry: bool
) -> None:
    h = Harness(capture=True, retry=retry)
    h.facts.tool_started(S, "t1", name="Bash", agent_id="", tool_input={"command": "ls"},
                         at_ns=300, decision=ALLOW)
    for step in order:
        tell(h, step)
        h.run_later()
    spans = h.by_name()
    assert set(spans) == {"turn", "execute_tool Bash"}
    tool, turn = spans["execute_tool Bash"], spans["turn"]
    assert tool.parent_span_id == turn.span_id and turn.parent_span_id == h.root_id
    a = tool.attributes
    assert a[A.GEN_AI_TOOL_CALL_RESULT] == "a.txt"
    assert a[A.POLICY_RULE_ID] == "p.yaml:allow[0]"
    assert a[A.TOOL_SPLIT_COST_USD] == 0.5
    assert (tool.start_ns, tool.end_ns) == (300, 400)
    assert (turn.start_ns, turn.end_ns) == (100, 400)


def test_a_tool_whose_response_never_comes_waits_in_run_and_goes_under_the_root_in_serve() -> (
    None
):
    for retry in (False, True):
        h = Harness(capture=False, retry=retry)
        h.facts.tool_started(S, "t1", name="Bash", agent_id="", tool_input=None, at_ns=300)
        h.facts.end_tool(S, {"tool_use_id": "t1"}, None, failed=True, end_ns=400)
        for _ in range(10):
            h.run_later()
        assert bool(h.spans) is retry  # serve gives up after its retries; run waits
        h.facts.close_leftovers(S, 900)
        (tool,) = h.spans
        assert tool.parent_span_id == h.root_id
        assert tool.status.code == "error" and tool.end_ns == 400


def test_what_never_ended_is_closed_incomplete_at_the_end() -> None:
    h = Harness(capture=True, retry=False)
    h.facts.tool_started(S, "t1", name="Bash", agent_id="", tool_input=None, at_ns=300)
    meta = ChatRequestMeta(100, 200, "m", None, None)
    h.facts.response_ended(S, "", "m", response("m1", "t1", "t2"), meta, None)
    assert h.spans == []  # the turn waits for its tools
    h.facts.close_leftovers(S, 900)
    spans = h.by_name()
    assert set(spans) == {"turn", "execute_tool Bash"}  # t2 never started: no span
    assert spans["execute_tool Bash"].attributes[A.INCOMPLETE] is True
    assert spans["turn"].attributes[A.INCOMPLETE] is True
    assert spans["turn"].end_ns == 900


def test_a_subagent_goes_inside_the_call_that_started_it_with_its_answer() -> None:
    h = Harness(capture=True, retry=False)
    h.facts.tool_started(S, "call", name="Agent", agent_id="",
                         tool_input={"prompt": "Write a marker file."}, at_ns=100)
    meta = ChatRequestMeta(50, 90, "m", None, None)
    h.facts.response_ended(S, "", "m", response("m1", "call"), meta, None)
    h.facts.agent_started(S, "a1", "general-purpose", 150)
    h.facts.agent_called_by(S, "a1", "call")
    h.facts.response_ended(S, "a1", "m", response("m2", text="Done."),
                           ChatRequestMeta(160, 170, "m", None, None), None)
    h.facts.agent_stopped(S, "a1", 180)
    h.facts.result_known(S, "call", "Done.")
    h.facts.end_tool(S, {"tool_use_id": "call"}, None, failed=False, end_ns=190)
    spans = {s.name: s for s in h.spans}
    assert len(h.spans) == 4, [s.name for s in h.spans]  # two turns, the call, the subagent
    agent, call = spans["invoke_agent general-purpose"], spans["execute_tool Agent"]
    assert agent.parent_span_id == call.span_id and (agent.start_ns, agent.end_ns) == (150, 180)
    assert "Write a marker file." in str(agent.attributes[A.GEN_AI_INPUT_MESSAGES])
    assert "Done." in str(agent.attributes[A.GEN_AI_OUTPUT_MESSAGES])
    sub_turn = next(s for s in h.spans if s.name == "turn" and s.parent_span_id == agent.span_id)
    assert sub_turn.attributes[A.GEN_AI_AGENT_NAME] == "general-purpose"
