"""The one seam where the gateway composes what it attaches to a run.

Policy and archive attach SDK hook callbacks; tracing and output attach message taps.
A tap sees every message Claude Code writes, as the raw JSON object, in order. Observers
hear what the gateway itself decided: each tool call's decision and each archive.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gateway.hookio.messages import StreamMessage

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
    from claude_agent_sdk.types import HookEvent

    from gateway.types import Decision

MessageTap = Callable[[StreamMessage], None]
CloseHook = Callable[[], None]


class Observer(Protocol):
    """Told what the gateway decided, as it decides (e.g. `agent-gateway run`'s progress)."""

    def decided(
        self, tool_use_id: str, tool_name: str, tool_input: Mapping[str, Any],
        decision: Decision | None,
    ) -> None: ...

    def archived(self, archive_id: str, error: str, blocked: bool) -> None: ...


@dataclass
class Attachments:
    """Hook callbacks, message taps and end-of-run callbacks for one run."""

    hooks: dict[HookEvent, list[HookMatcher]] = field(default_factory=dict)
    taps: list[MessageTap] = field(default_factory=list)
    on_close: list[CloseHook] = field(default_factory=list)
    observers: list[Observer] = field(default_factory=list)

    def add_hook(self, event: HookEvent, matcher: HookMatcher) -> None:
        self.hooks.setdefault(event, []).append(matcher)

    def tap(self, message: StreamMessage) -> None:
        for each in self.taps:
            each(message)

    def close(self) -> None:
        for each in self.on_close:
            each()


def compose_options(options: ClaudeAgentOptions, attachments: Attachments) -> ClaudeAgentOptions:
    """The caller's options plus the gateway's hooks, always with the partial stream on.

    Gateway hooks run before the caller's own for the same event, so a policy deny is
    decided before any caller hook sees the call.
    """
    merged: dict[HookEvent, list[HookMatcher]] = {}
    for event, matchers in attachments.hooks.items():
        merged.setdefault(event, []).extend(matchers)
    for event, matchers in (options.hooks or {}).items():
        merged.setdefault(event, []).extend(matchers)
    changes: dict[str, Any] = {"hooks": merged or None, "include_partial_messages": True}
    if options.can_use_tool is not None and options.permission_prompt_tool_name is None:
        # The SDK sets this itself only when it builds the transport; we build it.
        changes["permission_prompt_tool_name"] = "stdio"
    return dataclasses.replace(options, **changes)
