"""JSONL of hook inputs, one object per line, as Claude Code sends them to a command hook's
stdin. Read with the hook's own parser; inputs of other events (PreCompact, PostToolUse)
are passed over, so a capture of every hook input can be replayed as it is."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

from gateway.errors import HookInputError
from gateway.hookio.parse import tool_call_from_input
from gateway.policy.replay.items import BadLine, Item, Replayable


class HookInputsReader:
    kind = "hook inputs"

    def __init__(self, cwd: str) -> None:
        self._cwd = cwd

    def feed(self, where: str, line: Mapping[str, object]) -> Iterator[Item]:
        if line.get("hook_event_name", "PreToolUse") != "PreToolUse":
            return
        try:
            call = tool_call_from_input(line)
        except HookInputError as exc:
            yield BadLine(where, str(exc))
            return
        if not call.cwd:
            call = dataclasses.replace(call, cwd=self._cwd)
        yield Replayable(call, where)

    def finish(self) -> Iterator[Item]:
        return iter(())
