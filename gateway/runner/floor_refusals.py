"""Claude Code's own refusals, on record. A call its permission floor refuses (the policy's
denies the gateway mirrors into the run's settings, policy/floor.py) never reaches a hook:
without this an auditor sees a gap where the agent tried a read of `.env` with the Read tool.
The run's stream tells: the result's `permission_denials` name every refused call, and the
calls the gateway denied itself are known; each other one (never decided, or allowed or asked
by the gateway and refused by Claude Code all the same) is recorded as a deny by Claude Code,
with the input and what Claude Code told the model."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gateway.types import Decision, ToolCall

if TYPE_CHECKING:
    from gateway.handlers.engine import Engine

class FloorRefusals:
    """A message tap and decision observer for one run."""

    def __init__(self, engine: Engine, cwd: str) -> None:
        self._engine = engine
        self._cwd = cwd
        self._denied: set[str] = set()
        self._told: dict[str, str] = {}
        self._recorded: set[str] = set()

    def decided(self, tool_use_id: str, tool_name: str, tool_input: Mapping[str, Any],
                decision: Decision | None) -> None:
        if decision is not None and decision.kind == "deny":
            self._denied.add(tool_use_id)

    def archived(self, archive_id: str, error: str, blocked: bool) -> None:
        pass

    def tap(self, message: Mapping[str, Any]) -> None:
        kind = message.get("type")
        if kind == "user":
            self._read_results(message)
        elif kind == "result":
            for denial in message.get("permission_denials") or ():
                if isinstance(denial, dict):
                    self._record(denial, str(message.get("session_id") or ""))

    def _read_results(self, message: Mapping[str, Any]) -> None:
        content = (message.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get(
                    "is_error"):
                text = block.get("content")
                if isinstance(text, list):
                    text = " ".join(str(c.get("text", "")) for c in text if isinstance(c, dict))
                self._told[str(block.get("tool_use_id"))] = str(text)[:1000]

    def _record(self, denial: Mapping[str, Any], session_id: str) -> None:
        tool_use_id = str(denial.get("tool_use_id") or "")
        if not tool_use_id or tool_use_id in self._denied or tool_use_id in self._recorded:
            return
        if "hook error" in self._told.get(tool_use_id, ""):
            return  # a hook's block (one that failed: onFailure), not Claude Code's rules
        self._recorded.add(tool_use_id)
        tool_input = denial.get("tool_input")
        call = ToolCall(str(denial.get("tool_name") or ""),
                        tool_input if isinstance(tool_input, dict) else {},
                        tool_use_id=tool_use_id, session_id=session_id, cwd=self._cwd)
        reason = self._told.get(tool_use_id) or "refused by Claude Code's own permission rules"
        try:
            self._engine.record_refusal(call, f"Claude Code: {reason}")
        except Exception:  # a record that cannot be written never stops the run's output
            logging.getLogger("gateway.runner").exception("a floor refusal was not recorded")
