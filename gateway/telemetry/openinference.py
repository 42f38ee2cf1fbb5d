"""OpenInference attributes beside the GenAI ones, for Phoenix and Arize: pure.

Phoenix reads `openinference.span.kind` first and derives a kind from `gen_ai.operation.name`
only when it is missing, so a span without a GenAI operation (turn, compaction) shows as
"unknown" there. Each span gets its kind (AGENT, LLM, TOOL, CHAIN); the invoke_agent spans
also get `session.id` (Langfuse's session key) and `input.value` / `output.value` (the prompt
and the final answer, taken from the GenAI messages, so only with content capture on).
Nothing else is duplicated: Phoenix maps tokens, models and messages from the GenAI
attributes itself.
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
    if kind == A.OI_AGENT:
        conversation = spec.attributes.get(A.GEN_AI_CONVERSATION_ID)
        if conversation:
            attrs[A.SESSION_ID] = conversation
        for source, value_name, mime_name in (
            (A.GEN_AI_INPUT_MESSAGES, A.INPUT_VALUE, A.INPUT_MIME_TYPE),
            (A.GEN_AI_OUTPUT_MESSAGES, A.OUTPUT_VALUE, A.OUTPUT_MIME_TYPE),
        ):
            text = _text_of(spec.attributes.get(source))
            if text is not None:
                attrs[value_name] = text
                attrs[mime_name] = TEXT
    return replace(spec, attributes=attrs)


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
