"""Span spec -> the OTel SDK's ReadableSpan, keeping its exact ids, parent and times, within
the SDK's span limits (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT and the others)."""

from __future__ import annotations

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from gateway.telemetry.model import SpanSpec

SCOPE = InstrumentationScope("agent_gateway.telemetry", "0.1.0")
_KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT, "server": SpanKind.SERVER}
_CODES = {"unset": StatusCode.UNSET, "ok": StatusCode.OK, "error": StatusCode.ERROR}


def trace_state(header: str) -> TraceState:
    return TraceState.from_header([header]) if header else TraceState()


def to_readable(spec: SpanSpec, resource: Resource, limits: SpanLimits) -> ReadableSpan:
    state = trace_state(spec.trace_state)
    flags = TraceFlags(TraceFlags.SAMPLED)
    context = SpanContext(spec.trace_id, spec.span_id, False, flags, state)
    parent = None
    if spec.parent_span_id is not None:
        parent = SpanContext(
            spec.trace_id, spec.parent_span_id, spec.parent_is_remote, flags, state
        )
    code = _CODES[spec.status.code]
    description = spec.status.description if code is StatusCode.ERROR else None
    events = spec.events if limits.max_events is None else spec.events[: limits.max_events]
    return ReadableSpan(
        name=spec.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=BoundedAttributes(
            limits.max_span_attributes,
            spec.attributes,
            immutable=True,
            max_value_len=limits.max_span_attribute_length,
        ),
        kind=_KINDS[spec.kind],
        status=Status(code, description),
        start_time=spec.start_ns,
        end_time=spec.end_ns,
        instrumentation_scope=SCOPE,
        events=[
            Event(
                e.name,
                BoundedAttributes(
                    limits.max_event_attributes,
                    e.attributes,
                    immutable=True,
                    max_value_len=limits.max_attribute_length,
                ),
                e.time_ns,
            )
            for e in events
        ],
    )
