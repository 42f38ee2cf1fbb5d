"""A trace's fact layer, the one both vantage points feed: what happened to turns, tools,
subagents and compactions, kept in a `TraceState`, and each span made once its facts are
complete, by the one tree builder (tree.py).

`run` tells it what Claude Code's stream shows (spans.py), with an in-process store; `serve`
what hook events and proxied exchanges show (server/tracing.py), with a store its replicas may
share. A span is made by whichever caller completes its facts, exactly once
(`TraceState.remove` and `set_new` pick the one):
- a turn when its response and every tool it asked for have ended;
- a tool when its response link and (content capture) the result the model read are known;
- a subagent inside the Task/Agent call that started it, when that call ends;
- at the session's end (`close_leftovers`), whatever was left open, marked incomplete.

A tool whose response is not yet known waits for it: behind `serve`, where another replica's
proxy may still be streaming it (or no proxy is in the path), by a few retries and then under
its agent (or the root) with the link missing; in `run`, until the response is handed over.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatAccumulator, ChatRequestMeta
from gateway.telemetry.compaction import Compaction
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.fact_state import (
    TraceState,
    decision_from,
    decision_json,
    load_json,
    slim_post_tool_use,
)
from gateway.telemetry.ids import TOOL_SPAN_KIND
from gateway.telemetry.model import AttributeValue, SpanSpec
from gateway.telemetry.tools import DECISION_UNKNOWN, ToolCallState
from gateway.telemetry.tree import TURN, Tree
from gateway.types import Decision

LINK_RETRIES_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.5)
"""Waits for a tool's response link (written when another replica's stream ends)."""
_HELD = object()
AGENT = "agent"
COMPACTION = "compaction"
TOOL_END_FACTS = ("permission_decision", "permission_source", "task_id", "task_status")
"""What a tool's end may tell beyond PostToolUse's input (`run` reads them from the stream)."""

Retry = Callable[[float, Callable[[], None]], None]


class TraceFacts:
    """Spans from the kept facts. `retry` runs a job later (serve's tracing thread); without
    it, a tool whose response is unknown waits for `response_ended`."""

    def __init__(
        self,
        state: TraceState,
        content: ContentPolicy,
        *,
        tree: Callable[[str], Tree],
        export: Callable[[SpanSpec], None],
        retry: Retry | None = None,
    ) -> None:
        self._state = state
        self._content = content
        self._tree = tree
        self._export = export
        self._retry = retry

    def span_id(self, session: str, kind: str, key: str) -> int:
        return self._tree(session).ids.span_id(kind, key)

    def context_span(self, session: str, agent_id: str) -> int:
        """The span an agent's turns go under: its invoke_agent span, or the root."""
        return self.span_id(session, AGENT, agent_id) if agent_id else self._tree(session).root_id

    # --- responses ---------------------------------------------------------------------------
    def response_ended(
        self, session: str, agent_id: str, request_model: str, acc: ChatAccumulator,
        meta: ChatRequestMeta, cost: float | None,
    ) -> None:
        """A response of an agent's loop ended: its turn waits for the tools it asked for."""
        message_id = acc.message_id
        if agent_id:
            self.agent_answered(session, agent_id, acc)
        else:
            fields = {"stop": acc.stop_reason or ""}
            if request_model and not self._state.get(session, "model"):
                fields["model"] = request_model
            self._state.set(session, fields)
        tool_ids = [t.id for t in acc.tool_uses]
        index = int(self._state.add(session, f"turns:{agent_id}", 1))
        turn = {"start": meta.start_ns, "chat_end": meta.end_ns, "tools": tool_ids,
                "index": index, "agent": agent_id, "cost": cost}
        self._state.set(session, {f"turn:{message_id}": json.dumps(turn),
                                  **{f"tool-turn:{t}": message_id for t in tool_ids}})
        for tool_use_id in tool_ids:
            self._release(session, f"tool-unlinked:{tool_use_id}")
        self.maybe_end_turn(session, message_id)

    def maybe_end_turn(self, session: str, message_id: str) -> None:
        """Emit the turn once its response and every tool it asked for have ended."""
        state = self._state
        turn = load_json(state.get(session, f"turn:{message_id}"))
        if turn is None:
            return
        ends = [state.get(session, f"tool-end:{t}") for t in turn["tools"]]
        if any(e is None for e in ends):
            return
        if not state.remove(session, f"turn:{message_id}"):
            return  # another replica emitted it
        self._emit_turn(session, message_id, turn, [int(e or 0) for e in ends])

    def _emit_turn(
        self, session: str, message_id: str, turn: Mapping[str, Any], ends: Sequence[int],
        *, incomplete: bool = False,
    ) -> None:
        agent_id = str(turn.get("agent") or "")
        agent_type = self._state.get(session, f"agent-type:{agent_id}") if agent_id else None
        tool_use_id = self._state.get(session, f"agent-tool:{agent_id}") if agent_id else None
        extra: dict[str, AttributeValue] = {A.AGENT_ID: agent_id} if agent_id else {}
        if incomplete:
            extra[A.INCOMPLETE] = True
        tree = self._tree(session)
        self._export(tree.turn(
            message_id=message_id, parent_span_id=self.context_span(session, agent_id),
            start_ns=int(turn["start"]), end_ns=max([int(turn["chat_end"]), *ends]),
            index=int(turn["index"]), tool_calls=len(turn["tools"]),
            agent_name=agent_type or tree.agent_name, cost=turn.get("cost"),
            parent_tool_use_id=tool_use_id or "", extra=extra,
        ))

    # --- tools -------------------------------------------------------------------------------
    def tool_started(
        self, session: str, tool_use_id: str, *, name: str, agent_id: str, tool_input: Any,
        at_ns: int, decision: Decision | None = None,
    ) -> None:
        """A tool call is known: its name, agent and arguments, and when it started (the
        first time told: PreToolUse, or the response that asked for it)."""
        self._state.set_new(session, f"tool-start:{tool_use_id}", str(at_ns))
        fields = {
            f"tool:{tool_use_id}": json.dumps(
                {"name": name, "agent": agent_id,
                 "input": tool_input if self._content.capture else None}
            ),
        }
        if decision is not None:
            fields[f"tool-decision:{tool_use_id}"] = decision_json(decision)
        self._state.set(session, fields)

    def tool_decided(
        self, session: str, tool_use_id: str, decision: Decision | None, at_ns: int
    ) -> None:
        """PreToolUse answered: the tool runs (or is refused) from here."""
        fields = {f"tool-start:{tool_use_id}": str(at_ns)}
        if decision is not None:
            fields[f"tool-decision:{tool_use_id}"] = decision_json(decision)
        self._state.set(session, fields)

    def result_known(self, session: str, tool_use_id: str, response: Any) -> None:
        """A tool's result as the model read it; a tool span held for it ends with it."""
        self._state.set(session, {f"tool-result:{tool_use_id}": json.dumps(response)})
        self._release(session, f"tool-held:{tool_use_id}")

    def results_arrived(self, session: str, messages: Sequence[M.Message]) -> None:
        """The tool results a request sends back (after the last response: a compaction's
        request adds its instructions after them)."""
        since: list[M.Message] = []
        for message in reversed(messages):
            if message.get("role") == "assistant":
                break
            since.append(message)
        for part in (p for m in since for p in m.get("parts") or []):
            if part.get("type") == "tool_call_response" and part.get("id"):
                self.result_known(session, str(part["id"]), part["response"])

    def _release(self, session: str, key: str, *, last: bool = False) -> None:
        """A tool span held (for its result or its response) ends, once."""
        held = load_json(self._state.get(session, key))
        if held is not None and self._state.remove(session, key):
            self.end_tool(session, held["body"], decision_from(held["decision"]),
                          failed=held["failed"], end_ns=int(held["end"]),
                          attempt=len(LINK_RETRIES_S), last=last,
                          incomplete=bool(held.get("incomplete")))

    def _hold(
        self, session: str, key: str, body: Mapping[str, Any], decision: Decision | None,
        failed: bool | None, end_ns: int, incomplete: bool,
    ) -> None:
        held = {"body": slim_post_tool_use(body), "failed": failed, "end": end_ns,
                "decision": decision_json(decision) if decision else "",
                "incomplete": incomplete}
        self._state.set(session, {key: json.dumps(held)})

    def end_tool(
        self,
        session: str,
        body: Mapping[str, Any],
        decision: Decision | None,
        *,
        failed: bool | None,
        end_ns: int,
        attempt: int = 0,
        last: bool = False,
        incomplete: bool = False,
    ) -> None:
        """A tool call ended (`body`: PostToolUse's input, or what `run` read of it); its span
        once its response's link is known. `failed` None and `incomplete`: it never ended (the
        session did first). A Task/Agent call's subagent span comes just before it."""
        state = self._state
        tool_use_id = str(body.get("tool_use_id") or "")
        message_id = state.get(session, f"tool-turn:{tool_use_id}")
        if message_id is None and not last:
            if self._retry is None:
                self._hold(session, f"tool-unlinked:{tool_use_id}", body, decision, failed,
                           end_ns, incomplete)
                return
            if attempt < len(LINK_RETRIES_S):
                self._retry(
                    LINK_RETRIES_S[attempt],
                    lambda: self.end_tool(session, body, decision, failed=failed, end_ns=end_ns,
                                          attempt=attempt + 1, incomplete=incomplete),
                )
                return
        stored = load_json(state.get(session, f"tool:{tool_use_id}")) or {}
        decision = decision or decision_from(state.get(session, f"tool-decision:{tool_use_id}"))
        result = self._result_of(session, body, decision, failed, end_ns, last, incomplete)
        if result is _HELD:
            return
        agent_run = state.get(session, f"tool-agent:{tool_use_id}")
        if agent_run:
            self.emit_agent(session, agent_run, tool_use_id, end_ns)
        tool = self._tool_facts(session, body, stored, decision, failed, end_ns, result)
        tool.incomplete = incomplete
        turn = (load_json(state.get(session, f"turn:{message_id}")) if message_id else None) or {}
        attrs: dict[str, AttributeValue] = {}
        if decision is None:  # PreToolUse was answered elsewhere, or not at all
            attrs[A.POLICY_DECISION] = DECISION_UNKNOWN
        if tool.agent_id:
            parent_tool = state.get(session, f"agent-tool:{tool.agent_id}")
            if parent_tool:
                attrs[A.PARENT_TOOL_USE_ID] = parent_tool
        if message_id is not None:
            parent = self.span_id(session, TURN, message_id)
        else:
            parent = self.context_span(session, tool.agent_id)
        self._export(self._tree(session).tool(
            tool, parent_span_id=parent, turn_cost=turn.get("cost"),
            turn_tools=len(turn.get("tools") or ()), extra=attrs,
        ))
        state.set(session, {f"tool-end:{tool_use_id}": str(end_ns)})
        if message_id is not None:
            self.maybe_end_turn(session, message_id)

    def _tool_facts(
        self, session: str, body: Mapping[str, Any], stored: Mapping[str, Any],
        decision: Decision | None, failed: bool | None, end_ns: int, result: Any,
    ) -> ToolCallState:
        """The tool call as its start (kept) and its end (`body`) told it."""
        tool_use_id = str(body.get("tool_use_id") or "")
        start = self._state.get(session, f"tool-start:{tool_use_id}")
        duration = body.get("duration_ms")
        if start is None and isinstance(duration, int | float) and not isinstance(duration, bool):
            start = str(end_ns - int(duration * 1e6))
        tool = ToolCallState(
            tool_use_id=tool_use_id,
            name=str(body.get("tool_name") or stored.get("name") or ""),
            span_id=self.span_id(session, TOOL_SPAN_KIND, tool_use_id),
            start_ns=min(int(start or end_ns), end_ns),
            end_ns=end_ns,
            decision=decision,
            is_error=True if decision is not None and decision.kind == "deny" else failed,
            input=body.get("tool_input", stored.get("input")),
            result=result,
            agent_id=str(body.get("agent_id") or stored.get("agent") or ""),
            decided_ns=int(start) if start else None,
        )
        for name in TOOL_END_FACTS:
            if body.get(name):
                setattr(tool, name, str(body[name]))
        return tool

    def _result_of(
        self, session: str, body: Mapping[str, Any], decision: Decision | None,
        failed: bool | None, end_ns: int, last: bool, incomplete: bool,
    ) -> Any:
        """A tool's result as the model saw it: the text sent back to the model (the next
        request behind `serve`, the stream's tool_result in `run`), not PostToolUse's
        tool_response. Until it is known the span is held (_HELD); content capture only, and
        only for a call that succeeded. A session that ends first (max turns) never sends it:
        then PostToolUse's tool_response, as text where it can be."""
        if not self._content.capture or failed or (decision and decision.kind == "deny"):
            return None
        tool_use_id = str(body.get("tool_use_id") or "")
        key = f"tool-result:{tool_use_id}"
        raw = self._state.get(session, key)
        if raw is None and not last:
            held_key = f"tool-held:{tool_use_id}"
            self._hold(session, held_key, body, decision, failed, end_ns, incomplete)
            raw = self._state.get(session, key)  # it may have come meanwhile
            if raw is None or not self._state.remove(session, held_key):
                return _HELD
        return load_json(raw) if raw is not None else M.response_text(body.get("tool_response"))

    # --- subagents ---------------------------------------------------------------------------
    def agent_started(self, session: str, agent_id: str, agent_type: str, at_ns: int) -> None:
        """A subagent is known to run (its first sight; later ones keep the first time)."""
        self._state.set_new(session, f"agent-start:{agent_id}", str(at_ns))
        if agent_type:
            self._state.set(session, {f"agent-type:{agent_id}": agent_type})

    def agent_stopped(self, session: str, agent_id: str, at_ns: int) -> None:
        self._state.set(session, {f"agent-end:{agent_id}": str(at_ns)})

    def agent_answered(self, session: str, agent_id: str, acc: ChatAccumulator) -> None:
        """A subagent's latest response: its answer so far, for its invoke_agent span."""
        if self._content.capture:
            answer = {"text": "\n".join(acc.texts), "stop": acc.stop_reason}
            self._state.set(session, {f"agent-answer:{agent_id}": json.dumps(answer)})

    def agent_called_by(self, session: str, agent_id: str, tool_use_id: str) -> None:
        """The Task/Agent call that started a subagent: its span goes inside that call's."""
        self._state.set(session, {f"agent-tool:{agent_id}": tool_use_id,
                                  f"tool-agent:{tool_use_id}": agent_id})

    def emit_agent(self, session: str, agent_id: str, tool_use_id: str, at_ns: int) -> None:
        state = self._state
        if not state.set_new(session, f"agent-emitted:{agent_id}", "1"):
            return
        start = int(state.get(session, f"agent-start:{agent_id}") or at_ns)
        end = int(state.get(session, f"agent-end:{agent_id}") or at_ns)
        stored = load_json(state.get(session, f"tool:{tool_use_id}")) or {}
        answer = load_json(state.get(session, f"agent-answer:{agent_id}")) or {}
        self._export(self._tree(session).agent(
            span_id=self.span_id(session, AGENT, agent_id),
            tool_span_id=self.span_id(session, TOOL_SPAN_KIND, tool_use_id), start_ns=start,
            end_ns=end, agent_type=state.get(session, f"agent-type:{agent_id}") or "",
            agent_id=agent_id, tool_use_id=tool_use_id, tool_input=stored.get("input"),
            answer=answer.get("text") or None, stop_reason=answer.get("stop"),
        ))

    # --- compactions -------------------------------------------------------------------------
    def compaction_started(
        self, session: str, start_ns: int, trigger: str, archive_id: str, archive_error: str
    ) -> str:
        """PreCompact: the compaction's span id key, which its summary request goes under."""
        n = int(self._state.add(session, "compactions", 1))
        record = {"n": n, "start": start_ns, "trigger": trigger, "archive_id": archive_id,
                  "archive_error": archive_error}
        self._state.set(session, {COMPACTION: json.dumps(record)})
        return str(n)

    def open_compaction(self, session: str) -> int | None:
        """The span id of the compaction under way, if one is."""
        record = load_json(self._state.get(session, COMPACTION))
        return None if record is None else self.span_id(session, COMPACTION, str(record["n"]))

    def end_compaction(self, session: str, at_ns: int, *, result: str | None) -> None:
        record = load_json(self._state.get(session, COMPACTION))
        if record is None or not self._state.remove(session, COMPACTION):
            return
        comp = Compaction(
            span_id=self.span_id(session, COMPACTION, str(record["n"])),
            start_ns=int(record["start"]),
            end_ns=at_ns,
            trigger=record.get("trigger") or None,
            result=result,
            archive_id=record.get("archive_id") or None,
            archive_error=record.get("archive_error") or None,
            incomplete=result is None,
        )
        self._export(self._tree(session).compaction(comp))

    # --- the end -----------------------------------------------------------------------------
    def close_leftovers(self, session: str, at_ns: int) -> None:
        """At the end of a session: tools still waiting (for a result no request sent back, or
        a response never handed over), tools that never ended and their turns, an open
        compaction, all marked incomplete where they did not end."""
        for key in self._state.get_all(session):
            if key.startswith(("tool-held:", "tool-unlinked:")):
                self._release(session, key, last=True)
        data = self._state.get_all(session)
        if COMPACTION in data:
            self.end_compaction(session, at_ns, result=None)
        for key, raw in data.items():
            if not key.startswith("turn:"):
                continue
            turn = load_json(raw)
            message_id = key.removeprefix("turn:")
            if turn is None or not self._state.remove(session, key):
                continue
            ends = []
            for tool_use_id in turn["tools"]:
                end = self._state.get(session, f"tool-end:{tool_use_id}")
                if end is None and f"tool-start:{tool_use_id}" in data:  # asked for and run
                    self.end_tool(session, {"tool_use_id": tool_use_id}, None, failed=None,
                                  end_ns=at_ns, last=True, incomplete=True)
                ends.append(int(end) if end else at_ns)
            self._emit_turn(session, message_id, turn, ends, incomplete=True)
