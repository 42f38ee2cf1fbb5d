"""A run of the real agent loop with the gateway attached: options in, output and exit
status out (`agent-gateway run`, remote runs, the demo). Claude Code runs through its
command line (runner/claude_cli.py) with the gateway's hooks on a loopback http endpoint
(runner/hook_endpoint.py): no claude_agent_sdk import on this path."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from gateway.env import anthropic_base_url
from gateway.errors import EXIT_FAILED, EXIT_OK
from gateway.hookio.messages import StreamMessage
from gateway.runner.account import RunAccount
from gateway.runner.attachments import Attachments, MessageTap
from gateway.runner.budget import BudgetRefused, admit
from gateway.runner.options import RunOptions
from gateway.runner.output import (
    ResultTracker,
    StreamJsonPrinter,
    is_conversation_message,
    result_failure,
)

if TYPE_CHECKING:
    from gateway.runner.hook_answers import Decide


@dataclass
class RunRequest:
    """Everything `agent-gateway run` (or a remote run) asks for."""

    prompt: str
    options: RunOptions
    policy_paths: list[str] = field(default_factory=list)
    output_format: str = "text"
    progress: bool = False
    """Text mode: progress lines on stderr (session id, tool calls, retries, cost)."""


async def execute(
    request: RunRequest,
    out: TextIO,
    err: TextIO,
    extra_taps: list[MessageTap] | None = None,
    account: RunAccount | None = None,
    decide: Decide | None = None,
) -> int:
    """Run to the end of the stream, print as asked, return the exit status. With a team
    budget (`account.budget`): refused before it starts when the budget is used up, capped
    at what is left, and charged what it cost when it ends. `decide`: where its PreToolUse
    calls are decided (serve's workers) when not in this process."""
    account = account or RunAccount()
    budget = account.budget
    if budget is None:
        return await _execute(request, out, err, extra_taps, account, decide)
    if account.check_first:
        try:
            options = await admit(budget, request.options, err)
        except BudgetRefused as exc:
            print(f"agent-gateway run: {exc}", file=err)
            return exc.exit_code
        request = dataclasses.replace(request, options=options)
    try:
        return await _execute(request, out, err, extra_taps, account, decide)
    finally:
        await budget.charge()


async def _execute(
    request: RunRequest,
    out: TextIO,
    err: TextIO,
    extra_taps: list[MessageTap] | None,
    account: RunAccount,
    decide: Decide | None = None,
) -> int:
    import asyncio

    from gateway.policy.sandbox import with_hook_hosts
    from gateway.runner.claude_cli import claude_binary, merged_settings, run_claude
    from gateway.runner.hook_endpoint import HookEndpoint
    from gateway.runner.wiring import prepare_gateway

    tracker = ResultTracker()
    attachments = Attachments(taps=[tracker, *(extra_taps or [])])
    if request.output_format == "stream-json":
        attachments.taps.append(StreamJsonPrinter(out, request.options.include_partial_messages))
    elif request.output_format == "text" and request.progress:
        from gateway.runner.progress import Progress

        progress = Progress(err, anthropic_base_url(request.options.env))
        attachments.taps.append(progress)
        attachments.observers.append(progress)
    claude_binary()  # not found: say so before anything is set up
    options, answers = prepare_gateway(
        request.prompt, request.options, request.policy_paths, attachments, err, account
    )
    answers.decide = decide

    def tap(message: StreamMessage) -> None:
        if is_conversation_message(message):
            attachments.tap(message)

    try:
        with HookEndpoint(answers, asyncio.get_running_loop()) as endpoint:
            settings = with_hook_hosts(merged_settings(options, endpoint.settings()))
            status = await run_claude(request.prompt, options, settings, endpoint.env(), tap,
                                      on_start=endpoint.admit)
    finally:
        attachments.close()
    if tracker.last is None and status != 0:
        print(f"agent-gateway run: error: Claude Code exited with status {status}", file=err)
        return EXIT_FAILED
    # Claude Code exits nonzero after an error result; the result already says why.
    result = tracker.last
    if result is None:
        print("agent-gateway run: error: the agent ended without a result", file=err)
        return EXIT_FAILED
    if request.output_format == "json":
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif request.output_format == "text" and result.get("result"):
        out.write(str(result["result"]) + "\n")
    failure = result_failure(result)
    if failure:
        print(f"agent-gateway run: {failure}", file=err)
        return EXIT_FAILED
    return EXIT_OK
