"""One API response as a chat span: shared by the stream_event path and the proxy's SSE tap.

`ChatAccumulator` folds Messages API stream events (message_start .. message_stop) into one
response; `chat_span` turns it into a span. Both are pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.content import ContentPolicy, Precut
from gateway.telemetry.model import AttributeValue, SpanRef, SpanSpec, SpanStatus
from gateway.telemetry.pricing import PriceTable, Usage


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_from_api(raw: Mapping[str, Any]) -> Usage:
    """A Messages API `usage` object (message_start, message_delta or a whole message)."""
    split = raw.get("cache_creation")
    five = one = None
    if isinstance(split, Mapping):
        five = _int(split.get("ephemeral_5m_input_tokens"))
        one = _int(split.get("ephemeral_1h_input_tokens"))
    return Usage(
        input_tokens=_int(raw.get("input_tokens")) or 0,
        output_tokens=_int(raw.get("output_tokens")) or 0,
        cache_read_input_tokens=_int(raw.get("cache_read_input_tokens")) or 0,
        cache_creation_input_tokens=_int(raw.get("cache_creation_input_tokens")) or 0,
        cache_creation_5m_input_tokens=five,
        cache_creation_1h_input_tokens=one,
    )


@dataclass(slots=True)
class Pieces:
    """A text built from deltas, joined only when read (appending stays linear). With a
    `cap`, only its first `cap` characters are kept and the rest counted, so a response of
    any length holds a bounded amount here."""

    parts: list[str] = field(default_factory=list)
    kept: int = 0
    total: int = 0

    @classmethod
    def of(cls, text: str, cap: int | None) -> Pieces:
        pieces = cls()
        pieces.add(text, cap)
        return pieces

    def add(self, text: str, cap: int | None) -> None:
        self.total += len(text)
        if cap is not None:
            text = text[: max(0, cap - self.kept)]
        if text:
            self.parts.append(text)
            self.kept += len(text)

    @property
    def cut(self) -> bool:
        """Characters were dropped at the cap."""
        return self.total > self.kept

    def value(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


@dataclass(slots=True)
class ToolUseBlock:
    id: str
    name: str
    raw_input: Pieces = field(default_factory=Pieces)


@dataclass(slots=True)
class ChatAccumulator:
    """Folds the events of one streamed response. Later usage fields override earlier ones:
    message_delta's usage is cumulative and carries the final output_tokens.

    `content_cap` bounds what is kept of the content (for the output messages of content
    capture): None keeps it all; n keeps the first n characters of each text block and
    TOOL_INPUT_FACTOR * n of each tool input, counting the rest; 0 keeps none."""

    message_id: str = ""
    model: str = ""
    stop_reason: str | None = None
    usage_raw: dict[str, Any] = field(default_factory=dict)
    saw_start: bool = False
    saw_delta: bool = False
    error_type: str = ""
    error_message: str = ""
    final_usage: Usage | None = None
    final_source: str = ""
    content_cap: int | None = None
    text_blocks: list[Pieces] = field(default_factory=list)
    tool_uses: list[ToolUseBlock] = field(default_factory=list)
    order: list[ToolUseBlock | int] = field(default_factory=list)
    """Content blocks in order: a tool use, or the index of a text in `text_blocks`."""
    _blocks: dict[int, ToolUseBlock | Pieces] = field(default_factory=dict)

    @property
    def texts(self) -> list[str]:
        return [t.value() for t in self.text_blocks]

    @property
    def _tool_cap(self) -> int | None:
        return None if self.content_cap is None else self.content_cap * TOOL_INPUT_FACTOR

    def apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.saw_start = True
            self.message_id = str(message.get("id") or self.message_id)
            self.model = str(message.get("model") or self.model)
            self._merge_usage(message.get("usage"))
        elif kind == "content_block_start":
            self._start_block(_int(event.get("index")) or 0, event.get("content_block") or {})
        elif kind == "content_block_delta":
            self._delta(_int(event.get("index")) or 0, event.get("delta") or {})
        elif kind == "message_delta":
            self.saw_delta = True
            delta = event.get("delta") or {}
            if delta.get("stop_reason") is not None:
                self.stop_reason = str(delta["stop_reason"])
            self._merge_usage(event.get("usage"))
        elif kind == "error":
            error = event.get("error") or {}
            self.error_type = str(error.get("type") or "error")
            self.error_message = str(error.get("message") or "")

    def apply_message(self, message: Mapping[str, Any]) -> None:
        """A whole message (an `assistant` line, or a non-streaming body): ids, blocks, usage.

        An `assistant` line repeats message_start's usage, so it only fills what is unknown.
        """
        self.message_id = self.message_id or str(message.get("id") or "")
        self.model = self.model or str(message.get("model") or "")
        if not self.saw_start and not self.saw_delta:
            self._merge_usage(message.get("usage"))
            if message.get("stop_reason") is not None:
                self.stop_reason = str(message["stop_reason"])
        if self.saw_start:
            return  # the stream events carry the blocks already
        for block in message.get("content") or []:
            if block.get("type") == "text":
                self.order.append(len(self.text_blocks))
                self.text_blocks.append(Pieces.of(str(block.get("text") or ""), self.content_cap))
            elif block.get("type") == "tool_use":
                tool = ToolUseBlock(
                    str(block.get("id") or ""),
                    str(block.get("name") or ""),
                    Pieces.of(json.dumps(block.get("input") or {}), self._tool_cap),
                )
                self.tool_uses.append(tool)
                self.order.append(tool)

    def apply_final(self, usage: Usage, stop_reason: str | None, *, source: str) -> None:
        """The response's final usage and stop reason from outside the stream (`source` names
        where: e.g. `transcript`). It replaces the placeholder an `assistant` line carried."""
        self.final_usage = usage
        if stop_reason:
            self.stop_reason = stop_reason
        self.final_source = source

    @property
    def usage(self) -> Usage:
        if self.final_usage is not None and not self.saw_delta:
            return self.final_usage
        return usage_from_api(self.usage_raw)

    @property
    def exact(self) -> bool:
        """True when the final usage is known: from message_delta (not message_start's
        placeholder), or handed over by `apply_final`."""
        return self.saw_delta or self.final_usage is not None

    @property
    def usage_source(self) -> str:
        """`stream`, `apply_final`'s source, or `assistant_message` (placeholder usage)."""
        if self.saw_delta:
            return "stream"
        return self.final_source if self.final_usage is not None else "assistant_message"

    def output_parts(self) -> list[M.Part]:
        """The response's content as the conventions' parts, in order."""
        parts: list[M.Part] = []
        for item in self.order:
            if isinstance(item, ToolUseBlock):
                raw = item.raw_input
                arguments = cut_text(raw) if raw.cut else M.arguments_object(raw.value())
                parts.append(M.tool_call_part(item.id, item.name, arguments))
            else:
                parts.append(M.text_part(cut_text(self.text_blocks[item])))
        return parts

    def _merge_usage(self, raw: Any) -> None:
        if isinstance(raw, Mapping):
            self.usage_raw.update({k: v for k, v in raw.items() if v is not None})

    def _start_block(self, index: int, block: Mapping[str, Any]) -> None:
        if block.get("type") == "tool_use":
            # A stream starts the block with `input: {}` and sends the input as deltas; a
            # whole message (events_from_message) carries it here.
            given = block.get("input")
            tool = ToolUseBlock(
                str(block.get("id") or ""),
                str(block.get("name") or ""),
                Pieces.of(json.dumps(given) if given else "", self._tool_cap),
            )
            self.tool_uses.append(tool)
            self.order.append(tool)
            self._blocks[index] = tool
        elif block.get("type") == "text":
            text = Pieces.of(str(block.get("text") or ""), self.content_cap)
            self._blocks[index] = text
            self.order.append(len(self.text_blocks))
            self.text_blocks.append(text)

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        target = self._blocks.get(index)
        if isinstance(target, ToolUseBlock) and delta.get("type") == "input_json_delta":
            target.raw_input.add(str(delta.get("partial_json") or ""), self._tool_cap)
        elif isinstance(target, Pieces) and delta.get("type") == "text_delta":
            target.add(str(delta.get("text") or ""), self.content_cap)


TOOL_INPUT_FACTOR = 64
"""A tool input is kept up to this many times the content cap: whole, it is parsed and each
string in it cut; beyond, it is shown as its cut text."""


def cut_text(text: Pieces) -> str:
    """The text, or when it was capped, what ContentPolicy.cut makes of the whole."""
    return Precut.of(text.value(), text.total) if text.cut else text.value()


def events_from_message(message: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """A non-streaming response body as the stream events it stands for."""
    if not message or message.get("type") != "message":
        return []
    usage = message.get("usage") or {}
    return [
        {"type": "message_start", "message": {**message, "stop_reason": None}},
        *(
            {"type": "content_block_start", "index": i, "content_block": block}
            for i, block in enumerate(message.get("content") or [])
        ),
        {
            "type": "message_delta",
            "delta": {"stop_reason": message.get("stop_reason")},
            "usage": usage,
        },
        {"type": "message_stop"},
    ]


def accumulate(
    events: Sequence[Mapping[str, Any]],
    message: Mapping[str, Any] | None = None,
    *,
    content_cap: int | None = None,
) -> ChatAccumulator:
    """One response folded: its stream events, or a non-streaming body when there are none."""
    acc = ChatAccumulator(content_cap=content_cap)
    for event in events or events_from_message(message):
        acc.apply(event)
    return acc


def chat_span_name(model: str) -> str:
    return f"chat {model}" if model else "chat"


@dataclass(frozen=True, slots=True)
class ChatInput:
    """What was sent to the model, when known (content capture only)."""

    messages: Sequence[M.Message] = ()
    system: Sequence[M.Part] = ()
    tools: Sequence[Mapping[str, Any]] = ()


def chat_content(
    acc: ChatAccumulator, content: ContentPolicy, sent: ChatInput | None
) -> dict[str, AttributeValue]:
    """The conventions' message attributes of one response (content capture on)."""
    attrs: dict[str, AttributeValue] = {}
    if acc.saw_start or acc.order:
        finish = M.finish_reason(acc.stop_reason, error=bool(acc.error_type))
        output = content.render_list([M.output_message(acc.output_parts(), finish)])
        if output is not None:
            attrs[A.GEN_AI_OUTPUT_MESSAGES] = output
    if sent is None:
        return attrs
    for name, items in (
        (A.GEN_AI_INPUT_MESSAGES, sent.messages),
        (A.GEN_AI_SYSTEM_INSTRUCTIONS, sent.system),
        (A.GEN_AI_TOOL_DEFINITIONS, sent.tools),
    ):
        rendered = content.render_list(list(items)) if items else None
        if rendered is not None:
            attrs[name] = rendered
    return attrs


@dataclass(frozen=True, slots=True)
class ChatRequestMeta:
    """What the proxy knows about one upstream request besides the SSE events."""

    start_ns: int
    end_ns: int
    request_model: str = ""
    http_status: int | None = 200
    """None where the gateway did not see the exchange (`run` reads Claude Code's stream)."""
    retry_count: int | None = 0
    ttft_ns: int | None = None
    conversation_id: str = ""


def chat_span_from_sse(
    events: Iterable[Mapping[str, Any]],
    meta: ChatRequestMeta,
    *,
    parent: SpanRef,
    span_id: int,
    prices: PriceTable,
    content: ContentPolicy | None = None,
    sent: ChatInput | None = None,
) -> SpanSpec:
    """A chat span from a tapped Messages API SSE sequence (message_start .. message_stop)."""
    acc = ChatAccumulator()
    for event in events:
        acc.apply(event)
    return chat_span(acc, meta, parent=parent, span_id=span_id, prices=prices, content=content,
                     sent=sent)


def chat_span(
    acc: ChatAccumulator,
    meta: ChatRequestMeta,
    *,
    parent: SpanRef,
    span_id: int,
    prices: PriceTable,
    content: ContentPolicy | None = None,
    sent: ChatInput | None = None,
) -> SpanSpec:
    """A chat span from a response already folded (the proxy folds it as it passes, `run`
    from the stream); its cost, when known, is `gen_ai.usage.cost`."""
    attrs = _usage_attributes(acc, meta, prices)
    if acc.error_type:
        attrs[A.ERROR_TYPE] = acc.error_type
    content = content or ContentPolicy()
    if content.capture:
        attrs.update(chat_content(acc, content, sent))
    if meta.http_status is not None:
        attrs[A.HTTP_RESPONSE_STATUS_CODE] = meta.http_status
    if meta.retry_count is not None:
        attrs[A.CHAT_RETRY_COUNT] = meta.retry_count
    if meta.ttft_ns is not None:
        attrs[A.CHAT_TTFT_MS] = meta.ttft_ns / 1e6
        attrs[A.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = meta.ttft_ns / 1e9
    status = _chat_status(acc, meta, attrs)
    return SpanSpec(
        name=chat_span_name(acc.model or meta.request_model),
        trace_id=parent.trace_id,
        span_id=span_id,
        parent_span_id=parent.span_id,
        start_ns=meta.start_ns,
        end_ns=meta.end_ns,
        attributes=attrs,
        status=status,
        kind="client",
        parent_is_remote=parent.is_remote,
        trace_state=parent.trace_state,
    )


def _usage_attributes(
    acc: ChatAccumulator, meta: ChatRequestMeta, prices: PriceTable
) -> dict[str, AttributeValue]:
    """The request, the response's ids, tokens and (once the usage is final) its cost."""
    usage = acc.usage
    attrs: dict[str, AttributeValue] = {
        A.GEN_AI_OPERATION_NAME: A.OP_CHAT,
        A.GEN_AI_PROVIDER_NAME: A.PROVIDER_ANTHROPIC,
        A.GEN_AI_REQUEST_MODEL: meta.request_model or acc.model,
        A.GEN_AI_USAGE_INPUT_TOKENS: usage.total_input_tokens,
        A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read_input_tokens,
        A.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_creation_input_tokens,
        A.CHAT_USAGE_SOURCE: acc.usage_source,
    }
    for name, value in (
        (A.GEN_AI_CONVERSATION_ID, meta.conversation_id),
        (A.GEN_AI_RESPONSE_MODEL, acc.model),
        (A.GEN_AI_RESPONSE_ID, acc.message_id),
    ):
        if value:
            attrs[name] = value
    if usage.cache_creation_1h_input_tokens is not None:
        attrs[A.CHAT_CACHE_CREATION_1H_INPUT_TOKENS] = usage.cache_creation_1h_input_tokens
    if usage.cache_creation_5m_input_tokens is not None:
        attrs[A.CHAT_CACHE_CREATION_5M_INPUT_TOKENS] = usage.cache_creation_5m_input_tokens
    if acc.exact:
        attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
        if acc.stop_reason:
            attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] = (acc.stop_reason,)
        model = acc.model or meta.request_model
        cost = prices.cost(model, usage)
        if cost is None:
            attrs[A.COST_UNPRICED_MODEL] = model
        else:
            attrs[A.GEN_AI_USAGE_COST] = cost
    return attrs


def _chat_status(
    acc: ChatAccumulator, meta: ChatRequestMeta, attrs: dict[str, AttributeValue]
) -> SpanStatus:
    """ERROR for an HTTP error or an error event, with error.type and the message added."""
    failed = meta.http_status is not None and meta.http_status >= 400
    if not failed and not acc.error_type:
        return SpanStatus()
    error = acc.error_type or str(meta.http_status)
    attrs.setdefault(A.ERROR_TYPE, error)
    if acc.error_message:
        attrs[A.CHAT_ERROR_MESSAGE] = acc.error_message
    return SpanStatus("error", acc.error_message or (
        f"HTTP {meta.http_status}" if meta.http_status is not None else error))
