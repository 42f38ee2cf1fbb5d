"""Prometheus exposition text, parsed with prometheus_client's own parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

SCOPE_LABELS = ("otel_scope_name", "otel_scope_schema_url", "otel_scope_version")


def samples(text: str | bytes) -> list[tuple[str, dict[str, str], float]]:
    """(sample name, labels without the scope's, value) for every sample."""
    if isinstance(text, bytes):
        text = text.decode()
    out = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = {k: v for k, v in sample.labels.items() if k not in SCOPE_LABELS}
            out.append((sample.name, labels, float(sample.value)))
    return out


def total(text: str | bytes, name: str, **match: str) -> float:
    """The sum of `name`'s samples whose labels include `match`."""
    return sum(value for sample, labels, value in samples(text)
               if sample == name and all(labels.get(k) == v for k, v in match.items()))


def series(text: str | bytes, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(labels.items())): value
            for sample, labels, value in samples(text) if sample == name}
