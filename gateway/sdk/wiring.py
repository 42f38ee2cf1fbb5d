"""Turns a run request into what the gateway attaches: policy, archive, tracing."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from typing import Any, TextIO

from claude_agent_sdk import ClaudeAgentOptions, HookContext, HookMatcher
from claude_agent_sdk.types import HookInput, HookJSONOutput

from gateway.errors import ConfigError
from gateway.hooks.engine import Engine
from gateway.hooks.trail import audit_export_from_env
from gateway.integrity.keys import keys_from_env
from gateway.policy import Limits
from gateway.sdk.account import RunAccount, chat_metrics, run_metrics
from gateway.sdk.attachments import Attachments
from gateway.sdk.budget import LOCAL_TEAM
from gateway.sdk.tracer import RunTracer
from gateway.telemetry.metrics import GatewayMetrics
from gateway.telemetry.pricing import load_price_table


def attach_gateway(
    prompt: str | None,
    options: ClaudeAgentOptions,
    policy_paths: Sequence[str],
    attachments: Attachments,
    err: TextIO,
    account: RunAccount | None = None,
) -> ClaudeAgentOptions:
    """Add the gateway's hooks and taps to `attachments`; return the options to run with."""
    account = account or RunAccount()
    keys_from_env()  # a bad key file stops the run now, not at its first tool call
    export = audit_export_from_env()
    engine = Engine(policy_paths, audit_export=export)
    policy = engine.policy
    if policy is not None:
        options = apply_limits(options, policy.limits, err)
    tracer = RunTracer(prompt)
    if export is not None:
        export.locate(tracer)  # audit log records carry the run's tool span ids
        attachments.on_close.append(export.shutdown)
    attachments.taps.append(tracer.tap)
    attachments.on_close.append(tracer.close)
    metrics = account.metrics or run_metrics(err)
    if account.metrics is None:
        attachments.on_close.append(metrics.shutdown)  # after tracer.close: the last chats
    if metrics.enabled:
        tracer.observers.append(chat_metrics(metrics, account.team, load_price_table()))
        if account.metrics is None:
            metrics.observe_reload_errors(lambda: 1 if engine.reload_error else 0)
    if account.budget is not None:
        tracer.observers.append(account.budget.observe)
        if account.metrics is None:
            metrics.observe_budgets(account.budget.rows)
    attach_hooks(attachments, engine, tracer, metrics, account.team)
    return dataclasses.replace(options, env={**options.env, **tracer.child_env()})


def attach_hooks(
    attachments: Attachments,
    engine: Engine,
    tracer: RunTracer,
    metrics: GatewayMetrics | None = None,
    team: str = LOCAL_TEAM,
) -> None:
    metrics = metrics or GatewayMetrics()

    # No PostToolUse callback: the tool_result in the stream ends the tool span, and every
    # callback costs a control-protocol round trip per tool call.
    async def pre_tool_use(
        data: HookInput, tool_use_id: str | None, _ctx: HookContext
    ) -> HookJSONOutput:
        started = time.perf_counter()
        call, decision, output = engine.pre_tool_use(dict(data))
        metrics.decision(
            decision, call.tool_name if call else str(data.get("tool_name", "")), team
        )
        tracer.transcript(str(data.get("transcript_path") or ""))
        tracer.pre_tool_use(
            call.tool_use_id if call else str(tool_use_id or ""),
            call.tool_name if call else str(data.get("tool_name", "")),
            decision,
        )
        metrics.hook("PreToolUse", time.perf_counter() - started)
        return output  # type: ignore[return-value]  # the same JSON a command hook prints

    async def pre_compact(
        data: HookInput, _tool_use_id: str | None, _ctx: HookContext
    ) -> HookJSONOutput:
        # Archiving waits for the transcript to settle: keep the event loop free meanwhile.
        started = time.perf_counter()
        tracer.transcript(str(data.get("transcript_path") or ""))
        outcome, output = await asyncio.to_thread(engine.pre_compact, dict(data))
        metrics.compaction(str(data.get("trigger") or ""), outcome.outcome, team)
        if outcome.blocked:
            # Claude Code reports a blocking SDK callback only as "[callback]"; a system
            # message is how the reason reaches the stream.
            output = {**output, "systemMessage": outcome.block_reason}
        tracer.compacted(
            outcome.archive_id or None,
            outcome.error or None,
            str(data.get("trigger") or "") or None,
        )
        metrics.hook("PreCompact", time.perf_counter() - started)
        return output  # type: ignore[return-value]

    attachments.add_hook("PreToolUse", HookMatcher(matcher=None, hooks=[pre_tool_use]))
    attachments.add_hook("PreCompact", HookMatcher(matcher=None, hooks=[pre_compact]))


def apply_limits(options: ClaudeAgentOptions, limits: Limits, err: TextIO) -> ClaudeAgentOptions:
    """Limits a caller cannot raise: lower values win, with a note; a forbidden model is refused."""
    changes: dict[str, Any] = {}
    for field, flag in (("max_turns", "--max-turns"), ("max_budget_usd", "--max-budget-usd")):
        cap = getattr(limits, field)
        asked = getattr(options, field)
        if cap is None:
            continue
        if asked is not None and asked > cap:
            err.write(
                f"agent-gateway: {flag} {asked} exceeds the policy limit {cap}; using {cap}\n"
            )
        if asked is None or asked > cap:
            changes[field] = cap
    if limits.models is not None:
        if options.model is None:
            changes["model"] = limits.models[0]
        elif not limits.allows_model(options.model):
            allowed = ", ".join(limits.models)
            raise ConfigError(f"model {options.model!r} is not allowed by policy ({allowed})")
    if limits.effort:
        highest = limits.effort[-1]
        if options.effort is not None and not limits.allows_effort(options.effort):
            err.write(
                f"agent-gateway: --effort {options.effort} is above the policy limit; "
                f"using {highest}\n"
            )
            changes["effort"] = highest
        elif options.effort is None:
            changes["effort"] = highest
    return dataclasses.replace(options, **changes) if changes else options
