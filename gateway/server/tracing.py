"""Server-mode tracing, stateless: hook events and proxied exchanges -> span specs.

No per-session state is kept. Every id is derived from the session id (trace), the message
id (chat), the tool_use_id (execute_tool) or a fixed key (the root), so several replicas
behind a load balancer emit one coherent trace:

    invoke_agent claude-code        root, emitted at SessionEnd
      chat {model}                  one per proxied /v1/messages request (the SSE tap)
      execute_tool {tool}           at PostToolUse / PostToolUseFailure; at PreToolUse for denies
      compaction                    at PreCompact (the archive step), with the archive id
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from gateway.server.proxy import ProxiedExchange
from gateway.telemetry import attributes as A
from gateway.telemetry.chat import ChatRequestMeta, chat_span_from_sse, events_from_message
from gateway.telemetry.compaction import Compaction, compaction_spec
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.ids import DeterministicIds, session_root, session_tool
from gateway.telemetry.model import AttributeValue, SpanRef, SpanSpec
from gateway.telemetry.pricing import PriceTable
from gateway.telemetry.tools import (
    DECISION_UNKNOWN,
    ToolCallState,
    tool_attributes,
    tool_status,
)
from gateway.types import Decision

AGENT_NAME = "claude-code"
TRANSCRIPT_HEAD_BYTES = 256 * 1024


class SpanExport(Protocol):
    def export(self, specs: Sequence[SpanSpec]) -> None: ...


def root_ref(session_id: str) -> SpanRef:
    return session_root(session_id)


class ServerTracer:
    """Builds and exports spans as hook events and proxied exchanges arrive."""

    def __init__(
        self,
        sink: SpanExport,
        prices: PriceTable,
        *,
        content: ContentPolicy | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._sink = sink
        self._prices = prices
        self._content = content or ContentPolicy()
        self._clock = clock

    # --- proxy ------------------------------------------------------------------------------
    def on_exchange(self, exchange: ProxiedExchange) -> None:
        """A proxied /v1/messages request ended: one chat span under the session's root."""
        if not exchange.session_id:
            return  # no session, no trace to join
        events = exchange.events or events_from_message(exchange.body_json)
        message_id = _message_id(events) or f"request:{exchange.started_ns}"
        ids = DeterministicIds(exchange.session_id)
        ttft = exchange.first_token_ns or exchange.first_byte_ns
        meta = ChatRequestMeta(
            start_ns=exchange.started_ns,
            end_ns=exchange.ended_ns or self._clock(),
            request_model=exchange.request_model,
            http_status=exchange.status,
            retry_count=exchange.retry_count,
            ttft_ns=ttft - exchange.started_ns if ttft else None,
            conversation_id=exchange.session_id,
        )
        spec = chat_span_from_sse(
            events,
            meta,
            parent=root_ref(exchange.session_id),
            span_id=ids.span_id("chat", message_id),
            prices=self._prices,
            content=self._content,
        )
        if exchange.agent_id or exchange.error:
            extra: dict[str, AttributeValue] = dict(spec.attributes)
            if exchange.agent_id:
                extra[A.AGENT_ID] = exchange.agent_id
            if exchange.error:
                extra[A.CHAT_ERROR_MESSAGE] = exchange.error
            spec = _with_attributes(spec, extra)
        self._sink.export([spec])

    # --- hooks ------------------------------------------------------------------------------
    def on_tool_denied(self, body: Mapping[str, Any], decision: Decision) -> None:
        """A PreToolUse deny: no PostToolUse follows, so the span is complete now."""
        now = self._clock()
        self._export_tool(body, decision, start_ns=now, end_ns=now, is_error=None)

    def on_tool_end(self, body: Mapping[str, Any], decision: Decision | None, failed: bool) -> None:
        """PostToolUse / PostToolUseFailure: start = now - duration_ms when Claude Code says.
        `decision`: the one enforced at PreToolUse, None when this replica did not make it."""
        now = self._clock()
        duration = body.get("duration_ms")
        if isinstance(duration, int | float) and not isinstance(duration, bool) and duration >= 0:
            start = now - int(duration * 1e6)
        else:
            start = now
        self._export_tool(body, decision, start_ns=start, end_ns=now, is_error=failed)

    def on_compaction(
        self, body: Mapping[str, Any], start_ns: int, archive_id: str, error: str
    ) -> None:
        session_id = str(body.get("session_id") or "")
        if not session_id:
            return
        ids = DeterministicIds(session_id)
        trigger = str(body.get("trigger") or "")
        comp = Compaction(
            span_id=ids.span_id("compaction", f"{trigger}:{start_ns}"),
            start_ns=start_ns,
            end_ns=self._clock(),
            trigger=trigger or None,
            archive_id=archive_id or None,
            archive_error=error or None,
        )
        spec = compaction_spec(comp, {A.GEN_AI_CONVERSATION_ID: session_id})
        root = root_ref(session_id)
        self._sink.export([_placed(spec, trace_id=root.trace_id, parent_span_id=root.span_id)])

    def on_session_end(self, body: Mapping[str, Any]) -> None:
        """SessionEnd: the root span, from the transcript's first timestamp to now."""
        session_id = str(body.get("session_id") or "")
        if not session_id:
            return
        now = self._clock()
        start = transcript_start_ns(str(body.get("transcript_path") or "")) or now
        root = root_ref(session_id)
        attrs: dict[str, AttributeValue] = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_PROVIDER_NAME: A.PROVIDER_ANTHROPIC,
            A.GEN_AI_AGENT_NAME: AGENT_NAME,
            A.GEN_AI_CONVERSATION_ID: session_id,
        }
        if body.get("reason"):
            attrs[A.SESSION_END_REASON] = str(body["reason"])
        self._sink.export(
            [
                SpanSpec(
                    name=f"{A.OP_INVOKE_AGENT} {AGENT_NAME}",
                    trace_id=root.trace_id,
                    span_id=root.span_id,
                    parent_span_id=None,
                    start_ns=min(start, now),
                    end_ns=now,
                    attributes=attrs,
                )
            ]
        )

    def _export_tool(
        self,
        body: Mapping[str, Any],
        decision: Decision | None,
        *,
        start_ns: int,
        end_ns: int,
        is_error: bool | None,
    ) -> None:
        session_id = str(body.get("session_id") or "")
        tool_use_id = str(body.get("tool_use_id") or "")
        if not session_id or not tool_use_id:
            return
        name = str(body.get("tool_name") or "")
        tool = ToolCallState(
            tool_use_id=tool_use_id,
            name=name,
            span_id=session_tool(session_id, tool_use_id).span_id,
            start_ns=start_ns,
            end_ns=end_ns,
            decision=decision,
            is_error=is_error,
            input=body.get("tool_input"),
        )
        attrs = tool_attributes(tool, split_cost=None, content=self._content)
        if decision is None:
            attrs[A.POLICY_DECISION] = DECISION_UNKNOWN
        attrs[A.GEN_AI_CONVERSATION_ID] = session_id
        if body.get("agent_id"):
            attrs[A.AGENT_ID] = str(body["agent_id"])
        root = root_ref(session_id)
        self._sink.export(
            [
                SpanSpec(
                    name=f"execute_tool {name}" if name else "execute_tool",
                    trace_id=root.trace_id,
                    span_id=tool.span_id,
                    parent_span_id=root.span_id,
                    start_ns=start_ns,
                    end_ns=end_ns,
                    attributes=attrs,
                    status=tool_status(tool),
                )
            ]
        )


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


def _message_id(events: Sequence[Mapping[str, Any]]) -> str:
    for event in events:
        if event.get("type") == "message_start":
            return str((event.get("message") or {}).get("id") or "")
    return ""


def _with_attributes(spec: SpanSpec, attrs: Mapping[str, AttributeValue]) -> SpanSpec:
    from dataclasses import replace

    return replace(spec, attributes=dict(attrs))


def _placed(spec: SpanSpec, *, trace_id: int, parent_span_id: int) -> SpanSpec:
    from dataclasses import replace

    return replace(spec, trace_id=trace_id, parent_span_id=parent_span_id)
