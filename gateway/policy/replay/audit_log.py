"""The gateway's audit log (docs/audit.md): each decision record holds the tool, the input
decided (secrets redacted; cut when large), the decision and its rule. Records carry no cwd:
relative paths are decided against the directory replay is given. Event records (an observed
hook event, an archive step) decide nothing and are passed over."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import cast

from gateway.policy.replay.items import HOOK_KINDS, Item, NotDecidable, Recorded, Replayable
from gateway.types import JSONObject, ToolCall


class AuditLogReader:
    kind = "audit log"

    def __init__(self, cwd: str) -> None:
        self._cwd = cwd

    def feed(self, where: str, line: Mapping[str, object]) -> Iterator[Item]:
        tool = line.get("tool")
        if "event" in line or not isinstance(tool, str) or not tool:
            return
        use_id = _text(line, "tool_use_id")
        tool_input = line.get("input")
        if line.get("input_truncated") or not isinstance(tool_input, dict):
            yield NotDecidable(where, use_id, tool, "the audit log kept only part of its input "
                               "(input_truncated): it cannot be decided as it was made")
            return
        decision, rule_id = line.get("decision"), _text(line, "rule_id")
        recorded = Recorded(decision, rule_id) if isinstance(decision, str) and (
            decision in HOOK_KINDS) else None
        call = ToolCall(
            tool_name=tool, tool_input=cast(JSONObject, tool_input), tool_use_id=use_id,
            session_id=_text(line, "session_id"), cwd=_text(line, "cwd") or self._cwd,
            prompt_id=_text(line, "prompt_id"), agent_id=_text(line, "agent_id"),
        )
        yield Replayable(call, where, recorded, redacted=bool(line.get("input_redactions")))

    def finish(self) -> Iterator[Item]:
        return iter(())


def _text(line: Mapping[str, object], key: str) -> str:
    value = line.get(key)
    return value if isinstance(value, str) else ""
