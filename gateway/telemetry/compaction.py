"""A context compaction (status: compacting -> compact_boundary or failure): pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry.model import AttributeValue, SpanSpec, SpanStatus

SPAN_NAME = "compaction"


@dataclass(slots=True)
class Compaction:
    span_id: int
    start_ns: int
    end_ns: int | None = None
    trigger: str | None = None
    pre_tokens: Any = None
    post_tokens: Any = None
    duration_ms: Any = None
    result: str | None = None
    error: str | None = None
    archive_id: str | None = None
    archive_error: str | None = None
    incomplete: bool = False


def compaction_spec(comp: Compaction, base: Mapping[str, AttributeValue]) -> SpanSpec:
    """The compaction's name, attributes and status (ids and parent are the caller's)."""
    attrs: dict[str, AttributeValue] = dict(base)
    if comp.trigger:
        attrs[A.COMPACTION_TRIGGER] = comp.trigger
    for name, value in (
        (A.COMPACTION_PRE_TOKENS, comp.pre_tokens),
        (A.COMPACTION_POST_TOKENS, comp.post_tokens),
        (A.COMPACTION_DURATION_MS, comp.duration_ms),
    ):
        if isinstance(value, int | float) and not isinstance(value, bool):
            attrs[name] = value
    for name, text in (
        (A.COMPACTION_RESULT, comp.result),
        (A.COMPACTION_ERROR, comp.error),
        (A.COMPACTION_ARCHIVE_ID, comp.archive_id),
        (A.COMPACTION_ARCHIVE_ERROR, comp.archive_error),
    ):
        if text:
            attrs[name] = text
    if comp.incomplete:
        attrs[A.INCOMPLETE] = True
    failed = comp.result not in (None, "success") or comp.error
    if failed:
        status = SpanStatus("error", comp.error or str(comp.result))
    elif comp.archive_error:  # compacted, but the transcript was not archived first
        status = SpanStatus("error", f"archive failed: {comp.archive_error}")
    else:
        status = SpanStatus()
    return SpanSpec(
        name=SPAN_NAME,
        trace_id=0,
        span_id=comp.span_id,
        parent_span_id=None,
        start_ns=comp.start_ns,
        end_ns=comp.end_ns or comp.start_ns,
        attributes=attrs,
        status=status,
    )
