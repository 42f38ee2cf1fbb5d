"""Checking the local audit log against a copy exported off the host: OTLP JSON lines, one
ExportLogsServiceRequest per line, as the OpenTelemetry Collector's file exporter writes them.

Only the gateway's decision records count (event name or attribute); each carries the record
itself as its body, so the copy is checked on its own (its hash must match its contents)
before it is compared position by position with the local chain of the same id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.errors import ConfigError
from gateway.hashchain import HASH_KEY, record_hash
from gateway.telemetry.log_attributes import AUDIT_CHAIN, EVENT_DECISION
from gateway.types import JSON, JSONObject


@dataclass(frozen=True, slots=True)
class Exported:
    """One decision record found in the export."""

    line: int
    record: Mapping[str, JSON]

    @property
    def position(self) -> int:
        seq = self.record.get("seq")
        return seq if isinstance(seq, int) else 0

    @property
    def chain(self) -> str:
        return str(self.record.get("chain") or "")

    @property
    def hash(self) -> str:
        return str(self.record.get(HASH_KEY) or "")


@dataclass(frozen=True)
class Comparison:
    """What differs between the local chain and the exported copy, by 1-based position."""

    exported: int
    missing_locally: tuple[int, ...]
    missing_from_export: tuple[int, ...]
    different: tuple[int, ...]
    malformed: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (
            self.missing_locally or self.missing_from_export or self.different or self.malformed
        )

    def lines(self, noun: str = "record") -> list[str]:
        out = []
        if self.missing_locally:
            out.append(f"{_span(noun, self.missing_locally)}: in the export, missing from the "
                       "local log")
        if self.different:
            out.append(f"{_span(noun, self.different)}: differ between the local log and the "
                       "export")
        if self.missing_from_export:
            out.append(f"{_span(noun, self.missing_from_export)}: in the local log, missing "
                       "from the export")
        out.extend(self.malformed)
        return out


def read_exported(path: Path) -> tuple[list[Exported], list[str]]:
    """Decision records in an OTLP JSON lines file, and one line per unusable entry.
    Raises ConfigError when the file cannot be read at all."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"{path}: cannot read the export: {why}") from None
    found: list[Exported] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            request = json.loads(raw)
        except ValueError:
            problems.append(f"{path}:{number}: not JSON (expected OTLP JSON, one request a line)")
            continue
        for log_record in _log_records(request):
            if not _is_decision(log_record):
                continue
            body = _any_value(log_record.get("body"))
            record = _json_object(body)
            if record is None:
                problems.append(f"{path}:{number}: a decision log record whose body is not "
                                "the record as JSON")
                continue
            found.append(Exported(number, record))
    return found, problems


def compare(
    local: Sequence[Mapping[str, JSON]], chain: str, exported: Iterable[Exported], source: str
) -> Comparison:
    """The local records (positions 1..n) against the exported ones of `chain`."""
    by_position: dict[int, set[str]] = {}
    malformed: list[str] = []
    count = 0
    for item in exported:
        if item.chain != chain:
            continue
        count += 1
        if item.position < 1:
            malformed.append(f"{source}:{item.line}: exported record without a position")
            continue
        if record_hash(item.record) != item.hash:
            malformed.append(f"{source}:{item.line}: exported record {item.position} does not "
                             "match its own hash (altered after it left the gateway)")
            continue
        by_position.setdefault(item.position, set()).add(item.hash)
    missing_locally = []
    different = []
    for position, hashes in sorted(by_position.items()):
        if position > len(local):
            missing_locally.append(position)
        elif str(local[position - 1].get(HASH_KEY)) not in hashes or len(hashes) > 1:
            different.append(position)
    missing_from_export = [p for p in range(1, len(local) + 1) if p not in by_position]
    return Comparison(count, tuple(missing_locally), tuple(missing_from_export),
                      tuple(different), tuple(malformed))


def chains_in(exported: Iterable[Exported]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in exported:
        counts[item.chain] = counts.get(item.chain, 0) + 1
    return counts


def _log_records(request: Any) -> Iterator[Mapping[str, JSON]]:
    if not isinstance(request, Mapping):
        return
    for resource_logs in request.get("resourceLogs") or ():
        for scope_logs in (resource_logs or {}).get("scopeLogs") or ():
            for record in (scope_logs or {}).get("logRecords") or ():
                if isinstance(record, Mapping):
                    yield record


def _is_decision(record: Mapping[str, JSON]) -> bool:
    """By event name; a pipeline that drops event names still keeps the attributes."""
    if record.get("eventName") == EVENT_DECISION:
        return True
    listed = record.get("attributes")
    attrs = {
        a.get("key"): _any_value(a.get("value"))
        for a in (listed if isinstance(listed, list) else ())
        if isinstance(a, Mapping)
    }
    if attrs.get("event.name") == EVENT_DECISION:
        return True
    chain = attrs.get(AUDIT_CHAIN)
    return isinstance(chain, str) and not chain.startswith("archive:")


def _any_value(value: Any) -> Any:
    """OTLP JSON AnyValue -> Python (strings, numbers as JSON strings for 64-bit ints)."""
    if not isinstance(value, Mapping):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    for key in ("boolValue", "doubleValue"):
        if key in value:
            return value[key]
    return None


def _json_object(body: Any) -> JSONObject | None:
    if not isinstance(body, str):
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _span(noun: str, positions: Sequence[int]) -> str:
    """`records 41-90, 95` for a sorted list of positions."""
    runs: list[str] = []
    start = prev = positions[0]
    for p in [*positions[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        runs.append(f"{start}" if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    plural = noun + ("s" if len(positions) > 1 else "")
    return f"{plural} {', '.join(runs)}"
