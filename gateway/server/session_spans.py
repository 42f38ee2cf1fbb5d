"""The spans of `serve`'s sessions, made from the facts kept in the shared TraceState.

What the hook events and proxied exchanges said (tracing.py translates them) is kept per
session; a span is made once its facts are complete, by whichever replica completes them,
exactly once (`TraceState.remove` and `set_new` pick the one): a turn when its response and
every tool it asked for have ended, a tool when its response link and (content capture) the
result the next request sent back are known, a subagent inside the Task/Agent call that
started it, the root at SessionEnd or the idle timeout, with whatever was left open marked
incomplete. A tool whose response is not yet known (another replica's proxy still streaming
it) is retried for a moment, then put under its agent (or the root) with the link missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.server.trace_state import (
    TraceState,
    decision_from,
    decision_json,
    load_json,
    slim_post_tool_use,
)
from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatAccumulator, ChatRequestMeta
from gateway.telemetry.compaction import Compaction
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.ids import TOOL_SPAN_KIND, DeterministicIds, session_root
from gateway.telemetry.model import AttributeValue, SpanRef, SpanSpec, SpanStatus
from gateway.telemetry.tools import DECISION_UNKNOWN, ToolCallState
from gateway.telemetry.tree import INCOMPLETE_ERROR, TURN, Tree
from gateway.types import Decision

LINK_RETRIES_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.5)
"""Waits for a tool's response link (written when another replica's stream ends)."""
_HELD = object()
STOP_FAILURE = "stop_failure"
"""error.type of a root whose last prompt ended with StopFailure (an API error)."""


def span_ref(session: str, kind: str, key: str) -> SpanRef:
    ids = DeterministicIds(session)
    return SpanRef(ids.trace_id, ids.span_id(kind, key))


def agent_ref(session: str, agent_id: str) -> SpanRef:
    return span_ref(session, "agent", agent_id)


class SessionSpans:
    """Spans from the kept facts; `retry` runs a job later on the tracing thread."""

    def __init__(
        self,
        state: TraceState,
        content: ContentPolicy,
        *,
        tree: Callable[[str], Tree],
        export: Callable[[SpanSpec], None],
        retry: Callable[[float, Callable[[], None]], None],
    ) -> None:
        self._state = state
        self._content = content
        self._tree = tree
        self._export = export
        self._retry = retry

    def response_ended(
        self, session: str, agent_id: str, request_model: str, acc: ChatAccumulator,
        meta: ChatRequestMeta, cost: float | None,
    ) -> None:
        """A response of an agent's loop ended: its turn waits for the tools it asked for."""
        message_id = acc.message_id
        if agent_id and self._content.capture:  # its last answer, for its invoke_agent span
            answer = {"text": "\n".join(acc.texts), "stop": acc.stop_reason}
            self._state.set(session, {f"agent-answer:{agent_id}": json.dumps(answer)})
        if not agent_id:
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
        self.maybe_end_turn(session, message_id)

    def context_ref(self, session: str, agent_id: str) -> SpanRef:
        return agent_ref(session, agent_id) if agent_id else session_root(session)

    def results_arrived(self, session: str, messages: Sequence[M.Message]) -> None:
        """The tool results a request sends back (after the last response: a compaction's
        request adds its instructions after them), as the model sees them: each one's tool
        span, held since its PostToolUse, ends with it."""
        since: list[M.Message] = []
        for message in reversed(messages):
            if message.get("role") == "assistant":
                break
            since.append(message)
        for part in (p for m in since for p in m.get("parts") or []):
            if part.get("type") != "tool_call_response" or not part.get("id"):
                continue
            tool_use_id = str(part["id"])
            self._state.set(session, {f"tool-result:{tool_use_id}": json.dumps(part["response"])})
            key = f"tool-held:{tool_use_id}"
            self._end_held(session, key, self._state.get(session, key))

    def _release_held(self, session: str, at_ns: int) -> None:
        """At the end of a session: tools still waiting for a result no request sent back."""
        for key, raw in self._state.get_all(session).items():
            if key.startswith("tool-held:"):
                self._end_held(session, key, raw, last=True)

    def _end_held(self, session: str, key: str, raw: str | None, *, last: bool = False) -> None:
        """A tool span held for its result ends, once (another replica may get there first)."""
        held = load_json(raw)
        if held is not None and self._state.remove(session, key):
            self.end_tool(session, held["body"], decision_from(held["decision"]),
                           failed=bool(held["failed"]), end_ns=int(held["end"]), attempt=0,
                           last=last)

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
            message_id=message_id, parent_span_id=self.context_ref(session, agent_id).span_id,
            start_ns=int(turn["start"]), end_ns=max([int(turn["chat_end"]), *ends]),
            index=int(turn["index"]), tool_calls=len(turn["tools"]),
            agent_name=agent_type or tree.agent_name, cost=turn.get("cost"),
            parent_tool_use_id=tool_use_id or "", extra=extra,
        ))

    def end_tool(
        self,
        session: str,
        body: Mapping[str, Any],
        decision: Decision | None,
        *,
        failed: bool | None,
        end_ns: int,
        attempt: int,
        last: bool = False,
        incomplete: bool = False,
    ) -> None:
        """A tool's span, once its response's link is known; `failed` None and `incomplete`:
        it never ended (the session did first)."""
        state = self._state
        tool_use_id = str(body.get("tool_use_id") or "")
        message_id = state.get(session, f"tool-turn:{tool_use_id}")
        if message_id is None and attempt < len(LINK_RETRIES_S):
            self._retry(
                LINK_RETRIES_S[attempt],
                lambda: self.end_tool(
                    session, body, decision, failed=failed, end_ns=end_ns, attempt=attempt + 1
                ),
            )
            return
        stored = load_json(state.get(session, f"tool:{tool_use_id}")) or {}
        decision = decision or decision_from(state.get(session, f"tool-decision:{tool_use_id}"))
        result = self._result_of(session, body, decision, failed, end_ns, last)
        if result is _HELD:
            return
        tool = self._tool_facts(session, body, stored, decision, failed, end_ns, result)
        tool.incomplete = incomplete
        agent_id = tool.agent_id
        turn = (load_json(state.get(session, f"turn:{message_id}")) if message_id else None) or {}
        attrs: dict[str, AttributeValue] = {}
        if decision is None:  # PreToolUse was answered elsewhere, or not at all
            attrs[A.POLICY_DECISION] = DECISION_UNKNOWN
        if agent_id:
            parent_tool = state.get(session, f"agent-tool:{agent_id}")
            if parent_tool:
                attrs[A.PARENT_TOOL_USE_ID] = parent_tool
        if message_id is not None:
            parent = span_ref(session, TURN, message_id)
        else:
            parent = self.context_ref(session, agent_id)
        tree = self._tree(session)
        self._export(tree.tool(
            tool, parent_span_id=parent.span_id, turn_cost=turn.get("cost"),
            turn_tools=len(turn.get("tools") or ()), extra=attrs,
        ))
        state.set(session, {f"tool-end:{tool_use_id}": str(end_ns)})
        if message_id is not None:
            self.maybe_end_turn(session, message_id)

    def _tool_facts(
        self, session: str, body: Mapping[str, Any], stored: Mapping[str, Any],
        decision: Decision | None, failed: bool | None, end_ns: int, result: Any,
    ) -> ToolCallState:
        """The tool call as PreToolUse (kept) and PostToolUse (`body`) told it."""
        tool_use_id = str(body.get("tool_use_id") or "")
        start = self._state.get(session, f"tool-start:{tool_use_id}")
        duration = body.get("duration_ms")
        if start is None and isinstance(duration, int | float) and not isinstance(duration, bool):
            start = str(end_ns - int(duration * 1e6))
        return ToolCallState(
            tool_use_id=tool_use_id,
            name=str(body.get("tool_name") or stored.get("name") or ""),
            span_id=span_ref(session, TOOL_SPAN_KIND, tool_use_id).span_id,
            start_ns=min(int(start or end_ns), end_ns),
            end_ns=end_ns,
            decision=decision,
            is_error=True if decision is not None and decision.kind == "deny" else failed,
            input=body.get("tool_input", stored.get("input")),
            result=result,
            agent_id=str(body.get("agent_id") or stored.get("agent") or ""),
            decided_ns=int(start) if start else None,
        )

    def _result_of(
        self, session: str, body: Mapping[str, Any], decision: Decision | None, failed: bool | None,
        end_ns: int, last: bool,
    ) -> Any:
        """A tool's result as the model saw it: the text the next request sends back (the
        shape `run` sees), not PostToolUse's tool_response. Until that request comes the span
        is held (_HELD); content capture only, and only for a call that succeeded. A session
        that ends first (max turns) never sends it: then PostToolUse's tool_response, as
        text where it can be."""
        if not self._content.capture or failed or (decision and decision.kind == "deny"):
            return None
        tool_use_id = str(body.get("tool_use_id") or "")
        key = f"tool-result:{tool_use_id}"
        raw = self._state.get(session, key)
        if raw is None and not last:
            held = {"body": slim_post_tool_use(body), "failed": failed, "end": end_ns,
                    "decision": decision_json(decision) if decision else ""}
            self._state.set(session, {f"tool-held:{tool_use_id}": json.dumps(held)})
            raw = self._state.get(session, key)  # it may have come meanwhile
            if raw is None or not self._state.remove(session, f"tool-held:{tool_use_id}"):
                return _HELD
        return load_json(raw) if raw is not None else M.response_text(body.get("tool_response"))

    def finish_task(self, session: str, agent_id: str, at_ns: int) -> None:
        """A background subagent stopped: its span, then its Task/Agent call's span."""
        tool_use_id = self._state.get(session, f"agent-tool:{agent_id}")
        if not tool_use_id:
            return  # a foreground subagent: its PostToolUse comes next and ends both
        pending = load_json(self._state.get(session, f"task-pending:{tool_use_id}"))
        if pending is None or not self._state.remove(session, f"task-pending:{tool_use_id}"):
            return
        self.emit_agent(session, agent_id, tool_use_id, at_ns)
        self.end_tool(
            session, pending["body"], None, failed=bool(pending["failed"]), end_ns=at_ns, attempt=0
        )

    def emit_agent(self, session: str, agent_id: str, tool_use_id: str, at_ns: int) -> None:
        state = self._state
        if not state.set_new(session, f"agent-emitted:{agent_id}", "1"):
            return
        start = int(state.get(session, f"agent-start:{agent_id}") or at_ns)
        end = int(state.get(session, f"agent-end:{agent_id}") or at_ns)
        stored = load_json(state.get(session, f"tool:{tool_use_id}")) or {}
        answer = load_json(state.get(session, f"agent-answer:{agent_id}")) or {}
        self._export(self._tree(session).agent(
            span_id=agent_ref(session, agent_id).span_id,
            tool_span_id=span_ref(session, TOOL_SPAN_KIND, tool_use_id).span_id, start_ns=start,
            end_ns=end, agent_type=state.get(session, f"agent-type:{agent_id}") or "",
            agent_id=agent_id, tool_use_id=tool_use_id, tool_input=stored.get("input"),
            answer=answer.get("text") or None, stop_reason=answer.get("stop"),
        ))

    def end_compaction(self, session: str, at_ns: int, *, result: str | None) -> None:
        record = load_json(self._state.get(session, "compaction"))
        if record is None or not self._state.remove(session, "compaction"):
            return
        comp = Compaction(
            span_id=span_ref(session, "compaction", str(record["n"])).span_id,
            start_ns=int(record["start"]),
            end_ns=at_ns,
            trigger=record.get("trigger") or None,
            result=result,
            archive_id=record.get("archive_id") or None,
            archive_error=record.get("archive_error") or None,
            incomplete=result is None,
        )
        self._export(self._tree(session).compaction(comp))

    def close_root(
        self, session: str, at_ns: int, *, reason: str = "", idle: bool = False
    ) -> None:
        state = self._state
        state.forget_activity(session)
        if not state.remove(session, "root-open"):
            return  # closed already (by another replica, or by the idle timeout)
        self._release_held(session, at_ns)
        data = state.get_all(session)
        self._close_leftovers(session, data, at_ns)
        attrs: dict[str, AttributeValue] = {}
        if reason:
            attrs[A.SESSION_END_REASON] = reason
        stop = data.get("stop")
        if stop:
            attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] = (stop,)
        attrs[A.COST_CHAT_SUM_USD] = float(data.get("cost") or 0.0)
        attrs[A.COST_UNPRICED_CHATS] = int(float(data.get("unpriced") or 0))
        interrupted = "prompt-open" in data
        status = SpanStatus("ok")
        if data.get("failure"):
            status = SpanStatus("error", data["failure"])
            attrs[A.ERROR_TYPE] = STOP_FAILURE
        elif interrupted:
            status = SpanStatus(
                "error",
                "the agent loop ended before finishing its turn (no Stop hook): max turns, "
                "budget, or the process was stopped",
            )
            attrs[A.ERROR_TYPE] = INCOMPLETE_ERROR
        attrs[A.RESULT_IS_ERROR] = status.code == "error"
        if idle:
            attrs[A.SESSION_IDLE_CLOSED] = True
            attrs[A.INCOMPLETE] = True
            if status.code == "ok":
                status = SpanStatus()  # nothing failed that we know of; it just went quiet
        state.remove(session, "prompt-open")
        state.remove(session, "failure")
        self._export(self._tree(session).root(
            start_ns=int(data.get("start") or at_ns), end_ns=at_ns, model=data.get("model", ""),
            prompt=data.get("prompt") or None, answer=data.get("answer") or None,
            stop_reason=stop, status=status, attrs=attrs,
        ))

    def _close_leftovers(self, session: str, data: Mapping[str, str], at_ns: int) -> None:
        """At the end of a session: tools that never ended, their turns, an open compaction,
        all marked incomplete."""
        if "compaction" in data:
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
                end = data.get(f"tool-end:{tool_use_id}")
                if end is None and f"tool-start:{tool_use_id}" in data:
                    self.end_tool(session, {"tool_use_id": tool_use_id}, None, failed=None,
                                   end_ns=at_ns, attempt=len(LINK_RETRIES_S), last=True,
                                   incomplete=True)
                ends.append(int(end) if end else at_ns)
            self._emit_turn(session, message_id, turn, ends, incomplete=True)
