"""The SDK hook callbacks of `agent-gateway run` and `gateway.query`: PreToolUse and
PreCompact, answered by the functions every vantage point shares (hooks/decision.py,
hooks/compact.py, held by a hooks.engine.Engine), then shown to the run's tracer.

Fail closed: a callback that raised would reach Claude Code as a hook error, and the tool (or
the compaction) would go ahead. So nothing here raises: an exception before the answer is a
deny (a block), and tracing after it never changes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, cast

from claude_agent_sdk import HookContext, HookMatcher
from claude_agent_sdk.types import HookCallback, HookInput, HookJSONOutput

from gateway.errors import one_line
from gateway.hookio.wire import PreCompactOutput
from gateway.hooks.compact import PreCompactAnswer
from gateway.hooks.decision import PreToolUseAnswer, deny_output
from gateway.hooks.engine import Engine
from gateway.sdk.attachments import Attachments, Observer
from gateway.types import Decision

if TYPE_CHECKING:
    from gateway.telemetry.metrics import GatewayMetrics

log = logging.getLogger("gateway.sdk.callbacks")


class HookTracer(Protocol):
    """What the callbacks tell the run's tracer (gateway.sdk.tracer.RunTracer)."""

    def transcript(self, path: str | None) -> None: ...

    def pre_tool_use(self, tool_use_id: str, tool_name: str, decision: Decision | None) -> None: ...

    def compacted(self, archive_id: str | None, error: str | None, trigger: str | None) -> None: ...


class HookCounts:
    """The run's metrics of its own hook events (decisions, compactions, hook durations)."""

    def __init__(self, metrics: GatewayMetrics | None = None, team: str = "") -> None:
        self.metrics = metrics
        self.team = team

    def decided(self, tool_name: str, decision: Decision, started: float) -> None:
        if self.metrics is not None:
            self.metrics.decision(decision, tool_name, self.team)
            self.metrics.hook("PreToolUse", time.perf_counter() - started)

    def compacted(self, trigger: str, outcome: str, started: float) -> None:
        if self.metrics is not None:
            self.metrics.compaction(trigger, outcome, self.team)
            self.metrics.hook("PreCompact", time.perf_counter() - started)


def attach_hooks(
    attachments: Attachments, engine: Engine, tracer: HookTracer, counts: HookCounts | None = None
) -> None:
    # No PostToolUse callback: the tool_result in the stream ends the tool span, and every
    # callback costs a control-protocol round trip per tool call.
    counts = counts or HookCounts()
    pre_tool_use = pre_tool_use_callback(engine, tracer, attachments.observers, counts)
    pre_compact = pre_compact_callback(engine, tracer, attachments.observers, counts)
    attachments.add_hook("PreToolUse", HookMatcher(matcher=None, hooks=[pre_tool_use]))
    attachments.add_hook("PreCompact", HookMatcher(matcher=None, hooks=[pre_compact]))


def pre_tool_use_callback(
    engine: Engine,
    tracer: HookTracer,
    observers: Sequence[Observer] = (),
    counts: HookCounts | None = None,
) -> HookCallback:
    counted = counts or HookCounts()

    async def pre_tool_use(
        data: HookInput, tool_use_id: str | None, _ctx: HookContext
    ) -> HookJSONOutput:
        started = time.perf_counter()
        try:
            answer = engine.pre_tool_use(dict(data))
        except Exception as exc:  # the decision path does not raise; if it ever does: deny
            log.exception("PreToolUse not answered")
            return _sdk(deny_output(f"agent-gateway could not decide: {one_line(exc, typed=True)}"))
        _observe(lambda: _trace_tool(tracer, observers, data, tool_use_id, answer))
        name = answer.call.tool_name if answer.call else str(data.get("tool_name", ""))
        _observe(lambda: counted.decided(name, answer.decision, started))
        return _sdk(answer.output)

    return pre_tool_use


def pre_compact_callback(
    engine: Engine,
    tracer: HookTracer,
    observers: Sequence[Observer] = (),
    counts: HookCounts | None = None,
) -> HookCallback:
    counted = counts or HookCounts()

    async def pre_compact(
        data: HookInput, _tool_use_id: str | None, _ctx: HookContext
    ) -> HookJSONOutput:
        started = time.perf_counter()
        try:
            # Archiving waits for the transcript to settle: keep the event loop free meanwhile.
            answer = await asyncio.to_thread(engine.pre_compact, dict(data))
            output: PreCompactOutput = answer.output
            if answer.outcome.blocked:
                # Claude Code reports a blocking SDK callback only as "[callback]"; a system
                # message is how the reason reaches the stream.
                output = {**output, "systemMessage": answer.outcome.block_reason}
        except Exception as exc:  # whether the archive was required cannot be known: block
            log.exception("PreCompact not answered")
            reason = f"agent-gateway: compaction blocked: {one_line(exc, typed=True)}"
            return _sdk({"decision": "block", "reason": reason, "systemMessage": reason})
        _observe(lambda: _trace_compaction(tracer, observers, data, answer))
        trigger = str(data.get("trigger") or "")
        _observe(lambda: counted.compacted(trigger, answer.outcome.outcome, started))
        return _sdk(output)

    return pre_compact


def _trace_tool(
    tracer: HookTracer,
    observers: Sequence[Observer],
    data: HookInput,
    tool_use_id: str | None,
    answer: PreToolUseAnswer,
) -> None:
    tracer.transcript(str(data.get("transcript_path") or ""))
    call = answer.call
    call_id = call.tool_use_id if call else str(tool_use_id or "")
    name = call.tool_name if call else str(data.get("tool_name", ""))
    tracer.pre_tool_use(call_id, name, answer.decision)
    tool_input = data.get("tool_input")
    for observer in observers:
        observer.decided(
            call_id, name, tool_input if isinstance(tool_input, dict) else {}, answer.decision
        )


def _trace_compaction(
    tracer: HookTracer, observers: Sequence[Observer], data: HookInput, answer: PreCompactAnswer
) -> None:
    tracer.transcript(str(data.get("transcript_path") or ""))
    outcome = answer.outcome
    tracer.compacted(
        outcome.archive_id or None, outcome.error or None, str(data.get("trigger") or "") or None
    )
    for observer in observers:
        observer.archived(outcome.archive_id, outcome.error, outcome.blocked)


def _observe(step: Callable[[], None]) -> None:
    try:
        step()
    except Exception:  # tracing never changes an answer
        log.exception("tracing a hook event failed; the answer stands")


def _sdk(output: object) -> HookJSONOutput:
    # The same JSON a command hook prints; the SDK's TypedDicts mark every key optional.
    return cast(HookJSONOutput, output)
