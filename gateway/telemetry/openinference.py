"""OpenInference attributes beside the GenAI ones, for Phoenix and Arize: pure.

Phoenix reads `openinference.span.kind` first and derives a kind from `gen_ai.operation.name`
only when it is missing, so a span without a GenAI operation (turn, compaction) shows as
"unknown" there. Each span gets its kind (AGENT, LLM, TOOL, CHAIN); the invoke_agent spans
also get `session.id` (Langfuse's session key). `input.value` / `output.value`, the columns
Phoenix and Langfuse show first, are taken from the GenAI content attributes (so only with
content capture on): an agent's prompt and final answer as text, a chat's input and output
messages as JSON, a tool's arguments and result. Nothing else is duplicated: Phoenix maps
tokens, models and messages from the GenAI attributes itself.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry.model import AttributeValue, SpanSpec

_BY_OPERATION = {A.OP_INVOKE_AGENT: A.OI_AGENT, A.OP_CHAT: A.OI_LLM, A.OP_EXECUTE_TOOL: A.OI_TOOL}
CHAIN_SPANS = ("turn", "compaction")
TEXT = "text/plain"
JSON = "application/json"
_VALUES = {
    A.OI_AGENT: (A.GEN_AI_INPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES),
    A.OI_LLM: (A.GEN_AI_INPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES),
    A.OI_TOOL: (A.GEN_AI_TOOL_CALL_ARGUMENTS, A.GEN_AI_TOOL_CALL_RESULT),
}


def span_kind(spec: SpanSpec) -> str:
    operation = spec.attributes.get(A.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str) and operation in _BY_OPERATION:
        return _BY_OPERATION[operation]
    return A.OI_CHAIN if spec.name in CHAIN_SPANS else ""


def annotate(spec: SpanSpec) -> SpanSpec:
    kind = span_kind(spec)
    if not kind:
        return spec
    attrs: dict[str, AttributeValue] = {**spec.attributes, A.OPENINFERENCE_SPAN_KIND: kind}
    conversation = spec.attributes.get(A.GEN_AI_CONVERSATION_ID)
    if kind == A.OI_AGENT and conversation:
        attrs[A.SESSION_ID] = conversation
    sources = _VALUES.get(kind, ())
    for source, value_name, mime_name in zip(
        sources, (A.INPUT_VALUE, A.OUTPUT_VALUE), (A.INPUT_MIME_TYPE, A.OUTPUT_MIME_TYPE),
        strict=False,
    ):
        value = spec.attributes.get(source)
        if not isinstance(value, str):
            continue
        text = _text_of(value) if kind == A.OI_AGENT else value
        if text is not None:
            attrs[value_name] = text
            attrs[mime_name] = TEXT if kind == A.OI_AGENT or not _is_json(value) else JSON
    return replace(spec, attributes=attrs)


def _is_json(value: str) -> bool:
    return value[:1] in ("{", "[")


def _text_of(messages: Any) -> str | None:
    """The text parts of the last message of a GenAI messages attribute."""
    if not isinstance(messages, str):
        return None
    try:
        parsed = json.loads(messages)
    except ValueError:
        return None
    if not isinstance(parsed, list) or not parsed or not isinstance(parsed[-1], dict):
        return None
    parts = parsed[-1].get("parts") or []
    texts = [
        str(p.get("content")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
    ]
    return "\n".join(texts) if texts else None
