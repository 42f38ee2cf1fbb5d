"""The scripted session the budget tests spend on: a costly turn that runs `echo hi`, then a
cheap answer."""

from __future__ import annotations

from typing import Any

BIG = {"input_tokens": 100_000, "output_tokens": 42}
SMALL = {"input_tokens": 1200, "output_tokens": 42}
SCENARIO: dict[str, Any] = {
    "responses": [
        {"when": "prompt", "times": 0, "text": "checking", "usage": BIG,
         "tool_use": [{"name": "Bash", "input": {"command": "echo hi"}}]},
        {"when": "tool_result", "times": 0, "text": "done", "stop_reason": "end_turn",
         "usage": SMALL},
    ]
}
