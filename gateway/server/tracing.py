"""Server-mode tracing: hook events and proxied exchanges -> the facts of the session's trace,
handed to the one tree builder (gateway/telemetry/tree.py) that `run` uses too. The root
closes at SessionEnd or by the idle timeout; chats come from the proxy's SSE tap, tools from
PreToolUse (start, decision) to PostToolUse (end), subagents from SubagentStart to SubagentStop
(their responses carry x-claude-code-agent-id), compactions from PreCompact to PostCompact.

Ids come from the session, message, tool_use and agent ids, so every replica names every
span the same way. What links them is kept in a `TraceState` (trace_state.py): which
response asked for a tool, when a tool started and ended, which Task/Agent call started a
subagent, the session's running totals. With Redis every replica sees all of it; in memory,
one replica does. This module translates the events into those facts; session_spans.py
makes each span once its facts are complete.

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
from gateway.server.session_spans import SessionSpans, span_ref
from gateway.server.trace_state import (
    MemoryTraceState,
    TraceState,
    decision_json,
    load_json,
    slim_post_tool_use,
)
from gateway.server.trace_worker import TraceWorker
from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatInput, ChatRequestMeta
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.ids import DeterministicIds, session_root
from gateway.telemetry.model import AttributeValue, SpanSpec
from gateway.telemetry.pricing import PriceTable
from gateway.telemetry.tree import TURN, Tree
from gateway.types import Decision

log = logging.getLogger("gateway.server.tracing")

TRANSCRIPT_HEAD_BYTES = 256 * 1024
DEFAULT_IDLE_TIMEOUT_S = 1800.0
MAX_PARSED_BODY = CAPTURED_REQUEST_MAX
"""Request bodies parsed for content capture at most (larger: no input messages)."""
SUBAGENT_TOOLS = ("Agent", "Task")


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
    ) -> None:
        self._sink = sink
        self._prices = prices
        self._content = content or ContentPolicy()
        self._clock = clock
        self._state = state or MemoryTraceState()
        self.idle_timeout_s = idle_timeout_s
        self._worker = TraceWorker(self._sweep, self._sweep_every)
        self._spans = SessionSpans(
            self._state, self._content, tree=self._tree, export=self._export, retry=self._retry
        )

    @property
    def content_cap(self) -> int:
        """What a proxied response needs kept of its content: the capture limit, or none."""
        return self._content.limit if self._content.capture else 0

    # --- the worker ---------------------------------------------------------------------
    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        if not self._worker.closed:
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
        compaction = None if ex.agent_id else load_json(state.get(session, "compaction"))
        sent = self._sent(ex) if self._content.capture else None
        if sent is not None:
            self._spans.results_arrived(session, sent.messages)
        parent = self._spans.context_ref(session, ex.agent_id)
        if compaction is not None:
            parent = span_ref(session, "compaction", str(compaction["n"]))
        elif message_id and acc.saw_start:
            parent = span_ref(session, TURN, message_id)
        extra: dict[str, AttributeValue] = {}
        if ex.agent_id:
            extra[A.AGENT_ID] = ex.agent_id
            tool_use_id = state.get(session, f"agent-tool:{ex.agent_id}")
            if tool_use_id:
                extra[A.PARENT_TOOL_USE_ID] = tool_use_id
        if ex.error:
            extra[A.CHAT_ERROR_MESSAGE] = ex.error
        chat_id = span_ref(session, "chat", message_id or f"request:{ex.started_ns}").span_id
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
        self._spans.response_ended(session, ex.agent_id, ex.request_model, acc, meta, cost)

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
        self._state.set(
            session,
            {
                f"tool-start:{tool_use_id}": str(at_ns),
                f"tool:{tool_use_id}": json.dumps(
                    {"name": str(body.get("tool_name") or ""), "agent": body.get("agent_id") or "",
                     "input": body.get("tool_input") if self._content.capture else None}
                ),
                f"tool-decision:{tool_use_id}": decision_json(decision),
            },
        )
        if decision.kind == "deny":  # no PostToolUse follows
            self._spans.end_tool(session, body, decision, failed=False, end_ns=at_ns, attempt=0)

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
                        {"body": slim_post_tool_use(body), "failed": failed})},
                )
                if self._state.get(session, f"agent-end:{agent_id}") is not None:
                    self._spans.finish_task(session, agent_id, at_ns)
                return
            self._spans.emit_agent(session, agent_id, tool_use_id, at_ns)
        self._spans.end_tool(session, body, decision, failed=failed, end_ns=at_ns, attempt=0)

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
        self._spans.finish_task(session, agent_id, at_ns)

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
            self._spans.end_compaction(session, at_ns, result="success")

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
            self._spans.close_root(session, at_ns, reason=str(body.get("reason") or ""))

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
                self._spans.close_root(session, now, idle=True)
            except Exception:
                log.exception("closing an idle session's trace failed")

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


