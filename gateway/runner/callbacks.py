"""The SDK hook callbacks of `gateway.query`: PreToolUse and PreCompact as claude_agent_sdk
callbacks, answered by runner/hook_answers.py (the shared decision functions, then the run's
tracer, observers and metrics). `agent-gateway run` asks the same answers over an http hook.
"""

from __future__ import annotations

from typing import cast

from claude_agent_sdk import HookContext, HookMatcher
from claude_agent_sdk.types import HookCallback, HookInput, HookJSONOutput

from gateway.runner.attachments import Attachments
from gateway.runner.hook_answers import HookAnswers
from gateway.runner.hook_endpoint import TIMEOUT_S

__all__ = ["attach_hooks", "pre_compact_callback", "pre_tool_use_callback"]


def attach_hooks(attachments: Attachments, answers: HookAnswers) -> None:
    # No PostToolUse callback: the tool_result in the stream ends the tool span, and every
    # callback costs a control-protocol round trip per tool call.
    # The timeouts set, and a callback that fails (or overruns them) blocks: Claude Code's
    # default lets the tool run.
    pre_tool_use, pre_compact = pre_tool_use_callback(answers), pre_compact_callback(answers)
    attachments.add_hook("PreToolUse", HookMatcher(
        matcher=None, hooks=[pre_tool_use], timeout=TIMEOUT_S["PreToolUse"], on_failure="block"))
    attachments.add_hook("PreCompact", HookMatcher(
        matcher=None, hooks=[pre_compact], timeout=TIMEOUT_S["PreCompact"], on_failure="block"))


def pre_tool_use_callback(answers: HookAnswers) -> HookCallback:
    async def pre_tool_use(
        data: HookInput, tool_use_id: str | None, _ctx: HookContext
    ) -> HookJSONOutput:
        return _sdk(await answers.pre_tool_use(data, tool_use_id))

    return pre_tool_use


def pre_compact_callback(answers: HookAnswers) -> HookCallback:
    async def pre_compact(
        data: HookInput, _tool_use_id: str | None, _ctx: HookContext
    ) -> HookJSONOutput:
        return _sdk(await answers.pre_compact(data))

    return pre_compact


def _sdk(output: object) -> HookJSONOutput:
    # The same JSON a command hook prints; the SDK's TypedDicts mark every key optional.
    return cast(HookJSONOutput, output)
