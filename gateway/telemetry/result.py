"""The root span's attributes from the run's ResultMessage(s): pure.

One stream can carry several results (a background subagent finishing after the first one
triggers another query). Per-query fields are summed, cumulative ones taken from the last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry.model import AttributeValue, SpanStatus

_USAGE = (
    ("input_tokens", A.RESULT_USAGE_INPUT_TOKENS),
    ("output_tokens", A.RESULT_USAGE_OUTPUT_TOKENS),
    ("cache_read_input_tokens", A.RESULT_USAGE_CACHE_READ_INPUT_TOKENS),
    ("cache_creation_input_tokens", A.RESULT_USAGE_CACHE_CREATION_INPUT_TOKENS),
)


def _num(value: Any) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def query_cost_usd(result: Mapping[str, Any]) -> float | None:
    """The cost of the query this result ends (`model_usage_since_last_result`), or None.

    `total_cost_usd` counts the whole session, earlier processes of a resumed one included;
    this counts only what was spent since the previous result, i.e. in this process.
    """
    since = result.get("model_usage_since_last_result")
    if not isinstance(since, Mapping):
        return None
    costs = [_num(u.get("costUSD")) for u in since.values() if isinstance(u, Mapping)]
    return sum(c for c in costs if c is not None)


def run_cost_usd(results: Sequence[Mapping[str, Any]]) -> float | None:
    """What the stream's queries spent (summed `query_cost_usd`); None unless every result
    reports it."""
    costs = [query_cost_usd(r) for r in results]
    if not costs or None in costs:
        return None
    return sum(c for c in costs if c is not None)


def cost_attributes(
    chat_costs: Sequence[float | None], compaction_costs: Sequence[float | None],
    results: Sequence[Mapping[str, Any]],
) -> dict[str, AttributeValue]:
    """The root's cost reconciliation: the sum of the priced chats (the compactions' own chats
    among them) and how many were not priced, the compactions' share, what the results say
    was spent, and the difference once everything was priced."""
    chat_sum = sum(c for c in chat_costs if c is not None)
    unpriced = sum(1 for c in chat_costs if c is None)
    attrs: dict[str, AttributeValue] = {
        A.COST_CHAT_SUM_USD: chat_sum, A.COST_UNPRICED_CHATS: unpriced,
    }
    if compaction_costs:
        attrs[A.COST_COMPACTION_USD] = sum(c for c in compaction_costs if c is not None)
    spent = run_cost_usd(results)
    if spent is not None:
        attrs[A.COST_RUN_USD] = spent
    total = spent if spent is not None or not results else _num(results[-1].get("total_cost_usd"))
    if isinstance(total, int | float) and unpriced == 0 and None not in compaction_costs:
        attrs[A.COST_DIFFERENCE_USD] = round(chat_sum - total, 12)
    return attrs


def is_error_result(result: Mapping[str, Any]) -> bool:
    return bool(result.get("is_error")) or str(result.get("subtype") or "success") != "success"


def result_attributes(results: Sequence[Mapping[str, Any]]) -> dict[str, AttributeValue]:
    """Attributes for the root span; empty when there was no result."""
    if not results:
        return {}
    last = results[-1]
    errored = [r for r in results if is_error_result(r)]
    attrs: dict[str, AttributeValue] = {
        A.RESULT_SUBTYPE: str((errored[0] if errored else last).get("subtype") or ""),
        A.RESULT_IS_ERROR: bool(errored),
        A.RESULT_COUNT: len(results),
        A.RESULT_NUM_TURNS: sum(int(_num(r.get("num_turns")) or 0) for r in results),
        A.RESULT_DURATION_MS: sum(_num(r.get("duration_ms")) or 0 for r in results),
    }
    errors = tuple(str(e) for r in results for e in (r.get("errors") or []))
    if errors:
        attrs[A.RESULT_ERRORS] = errors
    if errored:  # the conventions ask for error.type on a span that ends in error
        attrs[A.ERROR_TYPE] = str(errored[0].get("subtype") or "error")
    for key, name in (
        ("stop_reason", A.RESULT_STOP_REASON),
        ("terminal_reason", A.RESULT_TERMINAL_REASON),
    ):
        if last.get(key) is not None:
            attrs[name] = str(last[key])
    if last.get("stop_reason"):
        attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] = (str(last["stop_reason"]),)
    for key, name in (
        ("total_cost_usd", A.RESULT_TOTAL_COST_USD),
        ("duration_api_ms", A.RESULT_DURATION_API_MS),
    ):
        value = _num(last.get(key))
        if value is not None:
            attrs[name] = value
    for key, name in _USAGE:
        attrs[name] = sum(int(_num((r.get("usage") or {}).get(key)) or 0) for r in results)
    for model, usage in (last.get("modelUsage") or {}).items():
        for wire, suffix in A.MODEL_USAGE_FIELDS:
            value = _num(usage.get(wire)) if isinstance(usage, Mapping) else None
            if value is not None:
                attrs[f"{A.RESULT_MODEL_USAGE_PREFIX}.{model}.{suffix}"] = value
    denied = {
        str(d.get("tool_use_id") or i)
        for r in results
        for i, d in enumerate(r.get("permission_denials") or [])
        if isinstance(d, Mapping)
    }
    attrs[A.RESULT_PERMISSION_DENIALS] = len(denied)
    return attrs


def result_status(results: Sequence[Mapping[str, Any]]) -> SpanStatus:
    """ERROR on every error subtype, with the errors; OK for a successful run."""
    if not results:
        return SpanStatus("error", "the stream ended without a result")
    errored = [r for r in results if is_error_result(r)]
    if not errored:
        return SpanStatus("ok")
    errors = [str(e) for r in errored for e in (r.get("errors") or [])]
    subtype = str(errored[0].get("subtype") or "error")
    return SpanStatus("error", f"{subtype}: {'; '.join(errors)}" if errors else subtype)
