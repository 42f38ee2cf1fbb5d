"""Server-mode tracing: hook events and proxied exchanges -> the facts of the session's trace,
handed to the fact layer `run` feeds too (gateway/telemetry/facts.py), which makes each span
once its facts are complete. The root closes at SessionEnd or by the idle timeout; chats come
from the proxy's SSE tap, tools from PreToolUse (start, decision) to PostToolUse (end),
subagents from SubagentStart to SubagentStop (their responses carry x-claude-code-agent-id),
compactions from PreCompact to PostCompact.

Ids come from the session, message, tool_use and agent ids, so every replica names every
span the same way. The facts are kept in a `TraceState`: with Redis every replica sees all of
them; in memory, one replica does. The root is this module's: what it says comes from hook
events only `serve` sees (Stop, StopFailure, SessionEnd).

Events are queued and handled by one worker thread (trace_worker.py), in order: nothing here
runs on the event loop (a Redis round trip, a request body parsed for content capture).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from gateway.server.proxy import CAPTURED_REQUEST_MAX, ProxiedExchange
from gateway.server.trace_worker import TraceWorker
from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatInput, ChatRequestMeta
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.fact_state import (
    MemoryTraceState,
    TraceState,
    load_json,
    slim_post_tool_use,
)
from gateway.telemetry.facts import TraceFacts
from gateway.telemetry.ids import DeterministicIds, session_root
from gateway.telemetry.model import AttributeValue, SpanSpec, SpanStatus
from gateway.telemetry.pricing import PriceTable
from gateway.telemetry.tree import INCOMPLETE_ERROR, TURN, Tree
from gateway.types import Decision

log = logging.getLogger("gateway.server.tracing")

TRANSCRIPT_HEAD_BYTES = 256 * 1024
DEFAULT_IDLE_TIMEOUT_S = 1800.0
MAX_PARSED_BODY = CAPTURED_REQUEST_MAX
"""Request bodies parsed for content capture at most (larger: no input messages)."""
SUBAGENT_TOOLS = ("Agent", "Task")
STOP_FAILURE = "stop_failure"
"""error.type of a root whose last prompt ended with StopFailure (an API error)."""


class SpanExport(Protocol):
    def export(self, specs: Sequence[SpanSpec]) -> None: ...


root_ref = session_root


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
        inline: bool = False,
    ) -> None:
        """`inline`: each event is handled on the caller's thread, at `clock()` (a replay of
        recorded events, handlers/local_trace.py), and a tool whose response is not known yet
        waits for it instead of being retried later."""
        self._sink = sink
        self._inline = inline
        self._prices = prices
        self._content = content or ContentPolicy()
        self._clock = clock
        self._state = state or MemoryTraceState()
        self.idle_timeout_s = idle_timeout_s
        self._worker = TraceWorker(self._sweep, self._sweep_every)
        self._facts = TraceFacts(
            self._state, self._content, tree=self._tree, export=self._export,
            retry=None if inline else self._retry,
        )

    @property
    def content_cap(self) -> int:
        """What a proxied response needs kept of its content: the capture limit, or none."""
        return self._content.limit if self._content.capture else 0

    # --- the worker ---------------------------------------------------------------------
    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        if self._inline:
            fn(*args, self._clock())
        elif not self._worker.closed:
            at = self._clock()
            self._worker.submit(lambda: fn(*args, at))

    def _retry(self, delay_s: float, fn: Callable[[], None]) -> None:
        self._worker.retry(delay_s, fn)

    def _sweep_every(self) -> float:
        return min(30.0, max(0.2, self.idle_timeout_s / 4))

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every queued event (and retry) is handled; True when done in time."""
        return self._worker.flush(timeout_s)

    def close(self, timeout_s: float = 5.0) -> None:
        """Handle what is queued (bounded), then stop the worker."""
        self._worker.close(timeout_s)

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
        facts = self._facts
        compaction = None if ex.agent_id else facts.open_compaction(session)
        sent = self._sent(ex) if self._content.capture else None
        if sent is not None:
            facts.results_arrived(session, sent.messages)
        parent = facts.context_span(session, ex.agent_id)
        if compaction is not None:
            parent = compaction
        elif message_id and acc.saw_start:
            parent = facts.span_id(session, TURN, message_id)
        extra: dict[str, AttributeValue] = {}
        if ex.agent_id:
            extra[A.AGENT_ID] = ex.agent_id
            tool_use_id = state.get(session, f"agent-tool:{ex.agent_id}")
            if tool_use_id:
                extra[A.PARENT_TOOL_USE_ID] = tool_use_id
        if ex.error:
            extra[A.CHAT_ERROR_MESSAGE] = ex.error
        chat_id = facts.span_id(session, "chat", message_id or f"request:{ex.started_ns}")
        spec, cost = self._tree(session).chat(
            acc, meta, span_id=chat_id, parent_span_id=parent, sent=sent, extra=extra
        )
        self._export(spec)
        if cost is not None:
            state.add(session, "cost", cost)
        elif acc.saw_start:
            state.add(session, "unpriced", 1)
        if compaction is not None or not message_id or not acc.saw_start:
            return
        facts.response_ended(session, ex.agent_id, ex.request_model, acc, meta, cost)

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

    # --- tools ----------------------------------------------------------------------------
    def _pre_tool_use(self, body: dict[str, Any], decision: Decision, at_ns: int) -> None:
        session = self._session(body, at_ns)
        tool_use_id = str(body.get("tool_use_id") or "")
        if not session or not tool_use_id:
            return
        self._facts.tool_started(
            session, tool_use_id, name=str(body.get("tool_name") or ""),
            agent_id=str(body.get("agent_id") or ""), tool_input=body.get("tool_input"),
            at_ns=at_ns, decision=decision,
        )
        if decision.kind == "deny":  # no PostToolUse follows
            self._facts.end_tool(session, body, decision, failed=False, end_ns=at_ns)

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
            self._facts.agent_called_by(session, agent_id, tool_use_id)
            if isinstance(response, Mapping) and response.get("isAsync"):
                # The call only launched the subagent: it ends when the subagent stops.
                self._state.set(
                    session,
                    {f"task-pending:{tool_use_id}": json.dumps(
                        {"body": slim_post_tool_use(body), "failed": failed})},
                )
                if self._state.get(session, f"agent-end:{agent_id}") is not None:
                    self._finish_task(session, agent_id, at_ns)
                return
        self._facts.end_tool(session, body, decision, failed=failed, end_ns=at_ns)

    def _finish_task(self, session: str, agent_id: str, at_ns: int) -> None:
        """A background subagent stopped: its Task/Agent call ends (and its span with it)."""
        tool_use_id = self._state.get(session, f"agent-tool:{agent_id}")
        if not tool_use_id:
            return  # a foreground subagent: its PostToolUse comes next and ends both
        pending = load_json(self._state.get(session, f"task-pending:{tool_use_id}"))
        if pending is None or not self._state.remove(session, f"task-pending:{tool_use_id}"):
            return
        self._facts.end_tool(session, pending["body"], None, failed=bool(pending["failed"]),
                             end_ns=at_ns)

    # --- subagents ------------------------------------------------------------------------
    def _subagent_start(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        agent_id = str(body.get("agent_id") or "")
        if session and agent_id:
            self._facts.agent_started(session, agent_id, str(body.get("agent_type") or ""), at_ns)

    def _subagent_stop(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        agent_id = str(body.get("agent_id") or "")
        if not session or self._state.get(session, f"agent-start:{agent_id}") is None:
            return  # not a subagent this gateway saw start (a compaction's, say)
        self._facts.agent_stopped(session, agent_id, at_ns)
        self._finish_task(session, agent_id, at_ns)

    # --- compaction -----------------------------------------------------------------------
    def _pre_compact(
        self, body: dict[str, Any], start_ns: int, archive_id: str, error: str, at_ns: int
    ) -> None:
        session = self._session(body, at_ns)
        if not session:
            return
        self._facts.compaction_started(
            session, start_ns, str(body.get("trigger") or ""), archive_id, error
        )

    def _post_compact(self, body: dict[str, Any], at_ns: int) -> None:
        session = self._session(body, at_ns)
        if session:
            self._facts.end_compaction(session, at_ns, result="success")

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
        """The session ended (or went quiet): what is left open, then the root."""
        state = self._state
        state.forget_activity(session)
        if not state.remove(session, "root-open"):
            return  # closed already (by another replica, or by the idle timeout)
        self._facts.close_leftovers(session, at_ns)
        data = state.get_all(session)
        status, attrs = root_outcome(data, reason=reason, idle=idle)
        state.remove(session, "prompt-open")
        state.remove(session, "failure")
        stop = data.get("stop")
        self._export(self._tree(session).root(
            start_ns=int(data.get("start") or at_ns), end_ns=at_ns, model=data.get("model", ""),
            prompt=data.get("prompt") or None, answer=data.get("answer") or None,
            stop_reason=stop, status=status, attrs=attrs,
        ))


def root_outcome(
    data: Mapping[str, str], *, reason: str, idle: bool
) -> tuple[SpanStatus, dict[str, AttributeValue]]:
    """The root's status and what the session's hook events said of its end."""
    attrs: dict[str, AttributeValue] = {}
    if reason:
        attrs[A.SESSION_END_REASON] = reason
    stop = data.get("stop")
    if stop:
        attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] = (stop,)
    attrs[A.COST_CHAT_SUM_USD] = float(data.get("cost") or 0.0)
    attrs[A.COST_UNPRICED_CHATS] = int(float(data.get("unpriced") or 0))
    status = SpanStatus("ok")
    if data.get("failure"):
        status = SpanStatus("error", data["failure"])
        attrs[A.ERROR_TYPE] = STOP_FAILURE
    elif "prompt-open" in data:
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
    return status, attrs


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


