"""Turns a run request into what the gateway attaches: policy and archive (the hook answers
of runner/hook_answers.py, as SDK callbacks or over the run's http hook endpoint), tracing, and
the policy's limits on the run's options (claude_agent_sdk's or the gateway's RunOptions)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from gateway.errors import ConfigError
from gateway.handlers.engine import Engine
from gateway.handlers.trail import audit_export_from_env
from gateway.integrity.keys import keys_from_env
from gateway.policy import Limits
from gateway.runner.account import RunAccount, chat_metrics, run_metrics
from gateway.runner.attachments import Attachments
from gateway.runner.floor_refusals import FloorRefusals
from gateway.runner.hook_answers import HookAnswers, HookCounts
from gateway.runner.options import AnyOptions
from gateway.runner.tracer import RunTracer
from gateway.telemetry import attributes as A
from gateway.telemetry.pricing import load_price_table

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions


def attach_gateway(
    prompt: str | None,
    options: ClaudeAgentOptions,
    policy_paths: Sequence[str],
    attachments: Attachments,
    err: TextIO,
    account: RunAccount | None = None,
) -> ClaudeAgentOptions:
    """Add the gateway's SDK hook callbacks and taps to `attachments`; return the options to
    run with."""
    from gateway.runner.callbacks import attach_hooks

    options, answers = prepare_gateway(prompt, options, policy_paths, attachments, err, account)
    attach_hooks(attachments, answers)
    return options


def prepare_gateway(
    prompt: str | None,
    options: AnyOptions,
    policy_paths: Sequence[str],
    attachments: Attachments,
    err: TextIO,
    account: RunAccount | None = None,
) -> tuple[AnyOptions, HookAnswers]:
    """Add the gateway's taps to `attachments`; return the options to run with and the hook
    answers to attach (they tell the observers of `attachments`)."""
    account = account or RunAccount()
    keys_from_env()  # a bad key file stops the run now, not at its first tool call
    export = audit_export_from_env()
    engine = Engine(policy_paths, audit_export=export)
    policy = engine.policy
    if policy is not None:
        options = apply_limits(options, policy.limits, err)
    tracer = RunTracer(prompt)
    tracer.annotate_root({A.POLICY_FILES: len(policy.file_layers) if policy is not None else 0})
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
    refusals = FloorRefusals(engine, str(options.cwd) if options.cwd is not None else
                             os.getcwd())
    attachments.taps.append(refusals.tap)
    attachments.observers.append(refusals)
    answers = HookAnswers(engine, tracer, attachments.observers, HookCounts(metrics, account.team),
                          trail=export)
    options = with_os_sandbox(options, answers, err)
    return dataclasses.replace(options, env={**options.env, **tracer.child_env()}), answers


def with_os_sandbox(options: AnyOptions, answers: HookAnswers, err: TextIO) -> AnyOptions:
    """The run's settings carry the policy's floor (Claude Code's own denies) and, with
    `sandbox: required`, turn Claude Code's OS sandbox on, and the answers know its
    fingerprint; where it cannot start, they deny Bash (one line says what to install) and
    Claude Code starts without it."""
    import json
    import os

    from gateway.policy.floor import mirrored_floor
    from gateway.runner.claude_cli import load_settings, merge_settings
    from gateway.runner.os_sandbox import run_sandbox

    cwd = str(options.cwd) if options.cwd is not None else None
    base = getattr(options, "base_env", None)  # a remote run's: the one Claude Code gets
    env = {**(base if base is not None else os.environ), **options.env}
    sandbox = run_sandbox(answers.engine.policy, env, cwd or "")
    answers.sandbox, answers.sandbox_unavailable = sandbox.fingerprint, sandbox.unavailable
    if sandbox.unavailable:
        err.write(f"agent-gateway: the policy requires Claude Code's OS sandbox (sandbox: "
                  f"required), which cannot start here: {sandbox.unavailable}; Bash calls are "
                  "denied until it can\n")
    if sandbox.unrelaxed:
        err.write(f"agent-gateway: the OS sandbox is on, but the hook decides Bash as without "
                  f"it: {sandbox.unrelaxed}\n")
    # The floor: Claude Code's own denies, which its search tools follow (policy/floor.py)
    policy = answers.engine.policy
    denies = mirrored_floor(policy, local_secrets=True).denies if policy is not None else []
    ours: dict[str, Any] = {**({"permissions": {"deny": denies}} if denies else {}),
                            **sandbox.settings}
    if not ours:
        return options
    merged = merge_settings(load_settings(options.settings, cwd), ours)
    return dataclasses.replace(options, settings=json.dumps(merged))


def apply_limits(options: AnyOptions, limits: Limits, err: TextIO) -> AnyOptions:
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
