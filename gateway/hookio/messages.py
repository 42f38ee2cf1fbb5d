"""Claude Code's stream-json messages, as far as the gateway reads them. Every message is a
JSON object (`StreamMessage`); the gateway prints them as they are and reads the `result`."""

from __future__ import annotations

from typing import Literal, TypedDict, cast

from gateway.types import JSONObject

StreamMessage = JSONObject
"""One line of `claude -p --output-format stream-json --verbose`."""


class ResultMessage(TypedDict, total=False):
    """The `result` message that ends a query (a stream can carry several)."""

    type: Literal["result"]
    subtype: str
    """`success`, or an error subtype (`error_max_turns`, `error_max_budget_usd`, ...)."""
    is_error: bool
    result: str
    errors: list[str]
    api_error_status: int | None
    terminal_reason: str
    stop_reason: str | None
    session_id: str
    num_turns: int
    duration_ms: float
    duration_api_ms: float
    total_cost_usd: float
    usage: JSONObject
    modelUsage: dict[str, JSONObject]
    permission_denials: list[JSONObject]


def as_result(message: StreamMessage) -> ResultMessage | None:
    """`message` when it is a result; its fields are read defensively all the same."""
    return cast(ResultMessage, message) if message.get("type") == "result" else None
