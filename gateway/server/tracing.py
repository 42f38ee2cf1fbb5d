"""Server-mode tracing: hook events and proxied exchanges -> the facts of the session's trace,
handed to the one tree builder (gateway/telemetry/tree.py) that `run` uses too. The root
closes at SessionEnd or by the idle timeout; chats come from the proxy's SSE tap, tools from
PreToolUse (start, decision) to PostToolUse (end), subagents from SubagentStart to SubagentStop
(their responses carry x-claude-code-agent-id), compactions from PreCompact to PostCompact.

Ids come from the session, message, tool_use and agent ids, so every replica names every
span the same way. What links them is kept in a `TraceState` (trace_state.py): which
response asked for a tool, when a tool started and ended, which Task/Agent call started a
subagent, the session's running totals. With Redis every replica sees all of it; in memory,
one replica does.

Events are queued and handled by one worker thread, in order: nothing here runs on the event
loop (a Redis round trip, a request body parsed for content capture). A tool whose response
is not yet known (another replica's proxy still streaming it) is retried for a moment, then
put under its agent (or the root) with the link missing.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from gateway.server.proxy import CAPTURED_REQUEST_MAX, ProxiedExchange
from gateway.server.trace_state import MemoryTraceState, TraceState
from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatInput, ChatRequestMeta
from gateway.telemetry.compaction import Compaction
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.ids import TOOL_SPAN_KIND, DeterministicIds, session_root
from gateway.telemetry.model import AttributeValue, SpanRef, SpanSpec, SpanStatus
from gateway.telemetry.pricing import PriceTable
from gateway.telemetry.tools import DECISION_UNKNOWN, ToolCallState
from gateway.telemetry.tree import INCOMPLETE_ERROR, TURN, Tree
from gateway.types import Decision

log = logging.getLogger("gateway.server.tracing")

TRANSCRIPT_HEAD_BYTES = 256 * 1024
DEFAULT_IDLE_TIMEOUT_S = 1800.0
LINK_RETRIES_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.5)
"""Waits for a tool's response link (written when another replica's stream ends)."""
MAX_PARSED_BODY = CAPTURED_REQUEST_MAX
"""Request bodies parsed for content capture at most (larger: no input messages)."""
SUBAGENT_TOOLS = ("Agent", "Task")
_HELD = object()
STOP_FAILURE = "stop_failure"
"""error.type of a root whose last prompt ended with StopFailure (an API error)."""


class SpanExport(Protocol):
    def export(self, specs: Sequence[SpanSpec]) -> None: ...


root_ref = session_root


def _ref(session: str, kind: str, key: str) -> SpanRef:
    ids = DeterministicIds(session)
    return SpanRef(ids.trace_id, ids.span_id(kind, key))


def _agent_ref(session: str, agent_id: str) -> SpanRef:
    return _ref(session, "agent", agent_id)


class ServerTracer:
    """Builds and exports spans as hook events and proxied exchanges arrive."""

    def __init__(
        self,
        sink: SpanExport,
        prices: PriceTable,
        *,
        content: ContentPolicy | None = None,
        clock: Callable[[], int] = time.time_ns,
        state: TraceState | None = None,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    ) -> None:
        self._sink = sink
        self._prices = prices
        self._content = content or ContentPolicy()
        self._clock = clock
        self._state = state or MemoryTraceState()
        self.idle_timeout_s = idle_timeout_s
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._later: list[tuple[float, int, Callable[[], None]]] = []
        """Retries: (due, order, job), a heap."""
        self._seq = itertools.count()
        self._busy = 0
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def content_cap(self) -> int:
        """What a proxied response needs kept of its content: the capture limit, or none."""
        return self._content.limit if self._content.capture else 0

    # --- the worker ---------------------------------------------------------------------
    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        if self._closed:
            return
        at = self._clock()
        with self._idle:
            self._busy += 1
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="agent-gateway-trace", daemon=True
                )
                self._thread.start()
        self._queue.put(lambda: fn(*args, at))

    def _work(self) -> None:
        next_sweep = time.monotonic() + self._sweep_every()
        while True:
            wait = max(0.0, min([next_sweep, *(x[0] for x in self._later[:1])]) - time.monotonic())
            try:
                job = self._queue.get(timeout=wait)
            except queue.Empty:
                job = None
                if self._closed:
                    return
            else:
                if job is None:
                    return
            if job is not None:
                self._run(job)
            now = time.monotonic()
            while self._later and self._later[0][0] <= now:
                self._run(heapq.heappop(self._later)[2])
            if now >= next_sweep:
                self._sweep()
                next_sweep = now + self._sweep_every()

    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except OSError as exc:  # the shared trace state is unreachable: one line, not a trace
            log.error("span building failed: %s", exc)
        except Exception:  # tracing never takes the gateway down
            log.exception("span building failed")
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()

    def _retry(self, delay_s: float, fn: Callable[[], None]) -> None:
        with self._idle:
            self._busy += 1
        heapq.heappush(self._later, (time.monotonic() + delay_s, next(self._seq), fn))

    def _sweep_every(self) -> float:
        return min(30.0, max(0.2, self.idle_timeout_s / 4))

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued event (and retry) is handled; True when done in time."""
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Handle what is queued (bounded), then stop the worker."""
        self.flush(timeout_s)
        self._closed = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout_s)

    # --- entry points (called on the event loop: they only queue) ------------------------
    def on_exchange(self, exchange: ProxiedExchange) -> None:
        if exchange.session_id:
            self._submit(self._exchange, exchange)

    def on_pre_tool_use(self, body: Mapping[str, Any], decision: Decision) -> None:
        self._submit(self._pre_tool_use, dict(body), decision)

    on_tool_denied = on_pre_tool_use  # a deny answered before the decision workers

    def on_tool_end(self, body: Mapping[str, Any], decision: Decision | None, failed: bool) -> None:
        self._submit(self._tool_end, dict(body), decision, failed)

    def on_compaction(
        self, body: Mapping[str, Any], start_ns: int, archive_id: str, error: str
    ) -> None:
        self._submit(self._pre_compact, dict(body), start_ns, archive_id, error)

    def on_hook(self, event: str, body: Mapping[str, Any]) -> None:
        """Any other observed hook event (the ones the tree needs are handled)."""
        handler = {
            "SubagentStart": self._subagent_start,
            "SubagentStop": self._subagent_stop,
            "PostCompact": self._post_compact,
            "UserPromptSubmit": self._prompt,
            "Stop": self._stop,
            "StopFailure": self._stop_failure,
            "SessionEnd": self._session_end,
        }.get(event)
        if handler is not None:
            self._submit(handler, dict(body))
        elif body.get("session_id"):
            self._submit(self._seen, dict(body))

    def on_session_end(self, body: Mapping[str, Any]) -> None:
        self.on_hook("SessionEnd", body)

    # --- session bookkeeping --------------------------------------------------------------
    def _session(self, body: Mapping[str, Any], at_ns: int) -> str:
        """The session of a hook input, marked active (its root opened if it was not)."""
        session = str(body.get("session_id") or "")
        if session:
            self._active(session, at_ns, str(body.get("transcript_path") or ""))
        return session

    def _active(self, session: str, at_ns: int, transcript_path: str = "") -> None:
        state = self._state
        state.touch(session, at_ns)
        if state.set_new(session, "root-open", "1"):
            # A new process of the session (a resumed one): its root counts afresh.
            start = transcript_start_ns(transcript_path) if transcript_path else None
            state.set(
                session,
                {"start": str(min(at_ns, start or at_ns)), "stop": "", "cost": "0.0",
                 "unpriced": "0", "prompt": "", "answer": "", "failure": "", "turns:": "0"},
            )

    def _seen(self, body: dict[str, Any], at_ns: int) -> None:
        self._session(body, at_ns)

    def _export(self, spec: SpanSpec) -> None:
        self._sink.export([spec])

    def _tree(self, session: str) -> Tree:
        """The session's trace: its ids are hashed from the session, the same on every replica."""
        return Tree(DeterministicIds(session), prices=self._prices, content=self._content,
                    session_id=session)

    # --- responses ------------------------------------------------------------------------
    def _exchange(self, ex: ProxiedExchange, at_ns: int) -> None:
        session = ex.session_id
        self._active(session, at_ns)
        state = self._state
        acc = ex.response()
        message_id = acc.message_id
        ttft = ex.first_token_ns or ex.first_byte_ns
        meta = ChatRequestMeta(
            start_ns=ex.started_ns,
            end_ns=ex.ended_ns or at_ns,
            request_model=ex.request_model,
            http_status=ex.status,
            retry_count=ex.retry_count,
            ttft_ns=ttft - ex.started_ns if ttft else None,
        )
        compaction = None if ex.agent_id else _json(state.get(session, "compaction"))
        sent = self._sent(ex) if self._content.capture else None
        if sent is not None:
            self._results_arrived(session, sent.messages)
        parent = self._context_ref(session, ex.agent_id)
        if compaction is not None:
            parent = _ref(session, "compaction", str(compaction["n"]))
        elif message_id and acc.saw_start:
            parent = _ref(session, TURN, message_id)
        extra: dict[str, AttributeValue] = {}
        if ex.agent_id:
            extra[A.AGENT_ID] = ex.agent_id
            tool_use_id = state.get(session, f"agent-tool:{ex.agent_id}")
            if tool_use_id:
                extra[A.PARENT_TOOL_USE_ID] = tool_use_id
        if ex.error:
            extra[A.CHAT_ERROR_MESSAGE] = ex.error
        chat_id = _ref(session, "chat", message_id or f"request:{ex.started_ns}").span_id
        spec, cost = self._tree(session).chat(
            acc, meta, span_id=chat_id, parent_span_id=parent.span_id, sent=sent, extra=extra
        )
        self._export(spec)
        if cost is not None:
            state.add(session, "cost", cost)
        elif acc.saw_start:
            state.add(session, "unpriced", 1)
        if compaction is not None or not message_id or not acc.saw_start:
            return
        if ex.agent_id and self._content.capture:  # its last answer, for its invoke_agent span
            answer = {"text": "\n".join(acc.texts), "stop": acc.stop_reason}
            state.set(session, {f"agent-answer:{ex.agent_id}": json.dumps(answer)})
        if not ex.agent_id:
            fields = {"stop": acc.stop_reason or ""}
            if ex.request_model and not state.get(session, "model"):
                fields["model"] = ex.request_model
            state.set(session, fields)
        tool_ids = [t.id for t in acc.tool_uses]
        index = int(state.add(session, f"turns:{ex.agent_id}", 1))
        turn = {
            "start": meta.start_ns,
            "chat_end": meta.end_ns,
            "tools": tool_ids,
            "index": index,
            "agent": ex.agent_id,
            "cost": cost,
        }
        state.set(
            session,
            {
                f"turn:{message_id}": json.dumps(turn),
                **{f"tool-turn:{t}": message_id for t in tool_ids},
            },
        )
        self._maybe_end_turn(session, message_id)

    def _context_ref(self, session: str, agent_id: str) -> SpanRef:
        return _agent_ref(session, agent_id) if agent_id else root_ref(session)

    def _sent(self, ex: ProxiedExchange) -> ChatInput | None:
        """What the request sent, parsed from its body (content capture only, bounded)."""
        body = ex.request_body
        if not body or len(body) > MAX_PARSED_BODY:
            return None
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(request, dict):
            return None
        return ChatInput(
            messages=M.request_messages(request.get("messages")),
            system=M.system_instructions(request.get("system")),
            tools=M.tool_definitions(request.get("tools")),
        )

    def _results_arrived(self, session: str, messages: Sequence[M.Message]) -> None:
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
        held = _json(raw)
        if held is not None and self._state.remove(session, key):
            self._end_tool(session, held["body"], _decision_from(held["decision"]),
                           failed=bool(held["failed"]), end_ns=int(held["end"]), attempt=0,
                           last=last)

    def _maybe_end_turn(self, session: str, message_id: str) -> None:
        """Emit the turn once its response and every tool it asked for have ended."""
        state = self._state
        turn = _json(state.get(session, f"turn:{message_id}"))
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
            message_id=message_id, parent_span_id=self._context_ref(session, agent_id).span_id,
            start_ns=int(turn["start"]), end_ns=max([int(turn["chat_end"]), *ends]),
            index=int(turn["index"]), tool_calls=len(turn["tools"]),
            agent_name=agent_type or tree.agent_name, cost=turn.get("cost"),
            parent_tool_use_id=tool_use_id or "", extra=extra,
        ))

    # --- tools ----------------------------------------------------------------------------
    def _pre_tool_use(self, body: dict[str, Any], decision: Decision, at_ns: int) -> None:
        session = self._session(body, at_ns)
        tool_use_id = str(body.get("tool_use_id") or "")
        if not session or not tool_use_id:
            return
        self._state.set(
            session,
            {
                f"tool-start:{tool_use_id}": str(at_ns),
                f"tool:{tool_use_id}": json.dumps(
                    {"name": str(body.get("tool_name") or ""), "agent": body.get("agent_id") or "",
                     "input": body.get("tool_input") if self._content.capture else None}
                ),
                f"tool-decision:{tool_use_id}": _decision_json(decision),
            },
        )
        if decision.kind == "deny":  # no PostToolUse follows
            self._end_tool(session, body, decision, failed=False, end_ns=at_ns, attempt=0)

    def _tool_end(
        self, body: dict[str, Any], decision: Decision | None, failed: bool, at_ns: int
    ) -> None:
        session = self._session(body, at_ns)
        tool_use_id = str(body.get("tool_use_id") or "")
        if not session or not tool_use_id:
            return
        response = body.get("tool_response")
        agent_id = response.get("agentId") if isinstance(response, Mapping) else None
        if str(body.get("tool_name") or "") in SUBAGENT_TOOLS and isinstance(agent_id, str):
            self._state.set(session, {f"agent-tool:{agent_id}": tool_use_id})
            if isinstance(response, Mapping) and response.get("isAsync"):
                # The call only launched the subagent: it ends when the subagent stops.
                self._state.set(
                    session,
                    {f"task-pending:{tool_use_id}": json.dumps(
                        {"body": _slim(body), "failed": failed})},
                )
                if self._state.get(session, f"agent-end:{agent_id}") is not None:
                    self._finish_task(session, agent_id, at_ns)
                return
            self._emit_agent(session, agent_id, tool_use_id, at_ns)
        self._end_tool(session, body, decision, failed=failed, end_ns=at_ns, attempt=0)

    def _end_tool(
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
                lambda: self._end_tool(
                    session, body, decision, failed=failed, end_ns=end_ns, attempt=attempt + 1
                ),
            )
            return
        stored = _json(state.get(session, f"tool:{tool_use_id}")) or {}
        decision = decision or _decision_from(state.get(session, f"tool-decision:{tool_use_id}"))
        result = self._result_of(session, body, decision, failed, end_ns, last)
        if result is _HELD:
            return
        start = state.get(session, f"tool-start:{tool_use_id}")
        duration = body.get("duration_ms")
        if start is None and isinstance(duration, int | float) and not isinstance(duration, bool):
            start = str(end_ns - int(duration * 1e6))
        agent_id = str(body.get("agent_id") or stored.get("agent") or "")
        tool = ToolCallState(
            tool_use_id=tool_use_id,
            name=str(body.get("tool_name") or stored.get("name") or ""),
            span_id=_ref(session, TOOL_SPAN_KIND, tool_use_id).span_id,
            start_ns=min(int(start or end_ns), end_ns),
            end_ns=end_ns,
            decision=decision,
            is_error=True if decision is not None and decision.kind == "deny" else failed,
            input=body.get("tool_input", stored.get("input")),
            result=result,
            agent_id=agent_id,
            decided_ns=int(start) if start else None,
            incomplete=incomplete,
        )
        turn = (_json(state.get(session, f"turn:{message_id}")) if message_id else None) or {}
        attrs: dict[str, AttributeValue] = {}
        if decision is None:  # PreToolUse was answered elsewhere, or not at all
            attrs[A.POLICY_DECISION] = DECISION_UNKNOWN
        if agent_id:
            parent_tool = state.get(session, f"agent-tool:{agent_id}")
            if parent_tool:
                attrs[A.PARENT_TOOL_USE_ID] = parent_tool
        if message_id is not None:
            parent = _ref(session, TURN, message_id)
        else:
            parent = self._context_ref(session, agent_id)
        tree = self._tree(session)
        self._export(tree.tool(
            tool, parent_span_id=parent.span_id, turn_cost=turn.get("cost"),
            turn_tools=len(turn.get("tools") or ()), extra=attrs,
        ))
        state.set(session, {f"tool-end:{tool_use_id}": str(end_ns)})
        if message_id is not None:
            self._maybe_end_turn(session, message_id)

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
            held = {"body": _slim(body), "decision": _decision_json(decision) if decision else "",
                    "failed": failed, "end": end_ns}
            self._state.set(session, {f"tool-held:{tool_use_id}": json.dumps(held)})
            raw = self._state.get(session, key)  # it may have come meanwhile
            if raw is None or not self._state.remove(session, f"tool-held:{tool_use_id}"):
                return _HELD
        return _json(raw) if raw is not None else M.response_text(body.get("tool_response"))

    # --- subagents ------------------------------------------------------------------------
    def _subagent_start(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        agent_id = str(body.get("agent_id") or "")
        if session and agent_id:
            self._state.set_new(session, f"agent-start:{agent_id}", str(at_ns))
            self._state.set(session, {f"agent-type:{agent_id}": str(body.get("agent_type") or "")})

    def _subagent_stop(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        agent_id = str(body.get("agent_id") or "")
        if not session or self._state.get(session, f"agent-start:{agent_id}") is None:
            return  # not a subagent this gateway saw start (a compaction's, say)
        self._state.set(session, {f"agent-end:{agent_id}": str(at_ns)})
        self._finish_task(session, agent_id, at_ns)

    def _finish_task(self, session: str, agent_id: str, at_ns: int) -> None:
        """A background subagent stopped: its span, then its Task/Agent call's span."""
        tool_use_id = self._state.get(session, f"agent-tool:{agent_id}")
        if not tool_use_id:
            return  # a foreground subagent: its PostToolUse comes next and ends both
        pending = _json(self._state.get(session, f"task-pending:{tool_use_id}"))
        if pending is None or not self._state.remove(session, f"task-pending:{tool_use_id}"):
            return
        self._emit_agent(session, agent_id, tool_use_id, at_ns)
        self._end_tool(
            session, pending["body"], None, failed=bool(pending["failed"]), end_ns=at_ns, attempt=0
        )

    def _emit_agent(self, session: str, agent_id: str, tool_use_id: str, at_ns: int) -> None:
        state = self._state
        if not state.set_new(session, f"agent-emitted:{agent_id}", "1"):
            return
        start = int(state.get(session, f"agent-start:{agent_id}") or at_ns)
        end = int(state.get(session, f"agent-end:{agent_id}") or at_ns)
        stored = _json(state.get(session, f"tool:{tool_use_id}")) or {}
        answer = _json(state.get(session, f"agent-answer:{agent_id}")) or {}
        self._export(self._tree(session).agent(
            span_id=_agent_ref(session, agent_id).span_id,
            tool_span_id=_ref(session, TOOL_SPAN_KIND, tool_use_id).span_id, start_ns=start,
            end_ns=end, agent_type=state.get(session, f"agent-type:{agent_id}") or "",
            agent_id=agent_id, tool_use_id=tool_use_id, tool_input=stored.get("input"),
            answer=answer.get("text") or None, stop_reason=answer.get("stop"),
        ))

    # --- compaction -----------------------------------------------------------------------
    def _pre_compact(
        self, body: dict[str, Any], start_ns: int, archive_id: str, error: str, at_ns: int
    ) -> None:
        session = self._session(body, at_ns)
        if not session:
            return
        n = int(self._state.add(session, "compactions", 1))
        record = {"n": n, "start": start_ns, "trigger": str(body.get("trigger") or ""),
                  "archive_id": archive_id, "archive_error": error}
        self._state.set(session, {"compaction": json.dumps(record)})

    def _post_compact(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        if session:
            self._end_compaction(session, at_ns, result="success")

    def _end_compaction(self, session: str, at_ns: int, *, result: str | None) -> None:
        record = _json(self._state.get(session, "compaction"))
        if record is None or not self._state.remove(session, "compaction"):
            return
        comp = Compaction(
            span_id=_ref(session, "compaction", str(record["n"])).span_id,
            start_ns=int(record["start"]),
            end_ns=at_ns,
            trigger=record.get("trigger") or None,
            result=result,
            archive_id=record.get("archive_id") or None,
            archive_error=record.get("archive_error") or None,
            incomplete=result is None,
        )
        self._export(self._tree(session).compaction(comp))

    # --- the prompt loop and the root -----------------------------------------------------
    def _prompt(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        if not session:
            return
        fields = {"prompt-open": "1"}
        # The root's prompt is the user's first; later ones (a task notification) are not.
        first = not self._state.get(session, "prompt")
        if self._content.capture and first and isinstance(body.get("prompt"), str):
            fields["prompt"] = body["prompt"]
        self._state.set(session, fields)

    def _stop(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        if not session:
            return
        self._state.remove(session, "prompt-open")
        answer = body.get("last_assistant_message")
        if self._content.capture and isinstance(answer, str):
            self._state.set(session, {"answer": answer})

    def _stop_failure(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        if session:
            error = body.get("error") or body.get("reason") or "StopFailure"
            self._state.set(session, {"failure": str(error)[:500]})

    def _session_end(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        if session:
            self._close_root(session, at_ns, reason=str(body.get("reason") or ""))

    def _sweep(self) -> None:
        """Close the roots of sessions silent for the idle timeout (a killed `claude -p`
        never sends SessionEnd)."""
        now = self._clock()
        try:
            silent = self._state.active_before(now - int(self.idle_timeout_s * 1e9))
        except OSError as exc:
            log.warning("idle sessions not readable: %s", exc)
            return
        for session in silent:
            try:
                self._close_root(session, now, idle=True)
            except Exception:
                log.exception("closing an idle session's trace failed")

    def _close_root(
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
            self._end_compaction(session, at_ns, result=None)
        for key, raw in data.items():
            if not key.startswith("turn:"):
                continue
            turn = _json(raw)
            message_id = key.removeprefix("turn:")
            if turn is None or not self._state.remove(session, key):
                continue
            ends = []
            for tool_use_id in turn["tools"]:
                end = data.get(f"tool-end:{tool_use_id}")
                if end is None and f"tool-start:{tool_use_id}" in data:
                    self._end_tool(session, {"tool_use_id": tool_use_id}, None, failed=None,
                                   end_ns=at_ns, attempt=len(LINK_RETRIES_S), last=True,
                                   incomplete=True)
                ends.append(int(end) if end else at_ns)
            self._emit_turn(session, message_id, turn, ends, incomplete=True)


def _json(raw: str | None) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


_DECISION_KEPT = ("kind", "rule_id", "reason", "would_deny", "enforced_by")
"""What a tool span shows of a decision; never `matched` (the command's text) in the shared
trace state, content capture or not."""


def _decision_json(decision: Decision) -> str:
    return json.dumps({k: getattr(decision, k) for k in _DECISION_KEPT})


def _decision_from(raw: str | None) -> Decision | None:
    data = _json(raw)
    if not isinstance(data, dict):
        return None
    return Decision(**{k: data[k] for k in _DECISION_KEPT if k in data})


def _slim(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a pending Task/Agent call's span needs from its PostToolUse input."""
    keep = ("session_id", "tool_use_id", "tool_name", "tool_input", "tool_response", "agent_id",
            "duration_ms")
    return {k: body[k] for k in keep if k in body}


def transcript_start_ns(path: str) -> int | None:
    """The first `timestamp` in a Claude Code transcript (JSONL), or None when unreadable."""
    if not path:
        return None
    try:
        with Path(path).open("rb") as f:
            head = f.read(TRANSCRIPT_HEAD_BYTES)
    except OSError:
        return None
    for line in head.splitlines():
        try:
            stamp = json.loads(line).get("timestamp")
            return int(datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() * 1e9)
        except (ValueError, AttributeError, TypeError):
            continue
    return None


