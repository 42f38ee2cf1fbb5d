"""The span spec: a finished span as a plain value, ready for any exporter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

AttributeValue = str | bool | int | float | tuple[str, ...]
Attributes = Mapping[str, AttributeValue]
SpanKindName = Literal["internal", "client", "server"]
StatusCodeName = Literal["unset", "ok", "error"]


@dataclass(frozen=True, slots=True)
class SpanRef:
    """Where a span sits: enough to parent another span on it or to build a TRACEPARENT."""

    trace_id: int
    span_id: int
    trace_state: str = ""
    is_remote: bool = False
    sampled: bool = True


@dataclass(frozen=True, slots=True)
class SpanStatus:
    code: StatusCodeName = "unset"
    description: str = ""


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """Something that happened at one moment of a span (a policy deny, say)."""

    name: str
    time_ns: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SpanSpec:
    """One finished span. Ids are ints (128-bit trace, 64-bit span); times are epoch ns."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None
    start_ns: int
    end_ns: int
    attributes: Attributes = field(default_factory=dict)
    status: SpanStatus = SpanStatus()
    kind: SpanKindName = "internal"
    parent_is_remote: bool = False
    trace_state: str = ""
    events: tuple[SpanEvent, ...] = ()

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)

    @property
    def ref(self) -> SpanRef:
        return SpanRef(self.trace_id, self.span_id, self.trace_state)
