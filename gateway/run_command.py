"""`agent-gateway run`: options in, the real agent loop, output and exit status out."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKError

from gateway.attachments import Attachments
from gateway.errors import GatewayError
from gateway.output import ResultTracker, StreamJsonPrinter, result_failure
from gateway.runner import query


@dataclass
class RunRequest:
    """Everything `agent-gateway run` (or a remote run) asks for, in SDK terms."""

    prompt: str
    options: ClaudeAgentOptions
    policy_paths: list[str] = field(default_factory=list)
    output_format: str = "text"


def request_from_args(args: argparse.Namespace) -> RunRequest:
    options = ClaudeAgentOptions(
        cwd=args.cwd,
        model=args.model,
        max_turns=args.max_turns,
        max_budget_usd=args.max_budget_usd,
        permission_mode=args.permission_mode,
        allowed_tools=[t for group in args.allowed_tools for t in group],
        disallowed_tools=[t for group in args.disallowed_tools for t in group],
        effort=args.effort,
        resume=args.resume,
        fork_session=args.fork_session,
        settings=args.settings,
        include_partial_messages=args.include_partial_messages,
        extra_args={"autocompact": args.autocompact} if args.autocompact else {},
    )
    return RunRequest(
        prompt=args.prompt,
        options=options,
        policy_paths=list(args.policy),
        output_format=args.output_format,
    )


def run_command(args: argparse.Namespace) -> int:
    if args.fork_session and not args.resume:
        print("agent-gateway run: error: --fork-session needs --resume SESSION", file=sys.stderr)
        return 2
    if args.max_turns is not None and args.max_turns < 1:
        print("agent-gateway run: error: --max-turns must be at least 1", file=sys.stderr)
        return 2
    try:
        return asyncio.run(execute(request_from_args(args), sys.stdout, sys.stderr))
    except GatewayError as exc:
        print(f"agent-gateway run: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


async def execute(
    request: RunRequest, out: TextIO, err: TextIO, extra_taps: list[Any] | None = None
) -> int:
    """Run to the end of the stream, print as asked, return the exit status."""
    from gateway.wiring import attach_gateway

    tracker = ResultTracker()
    attachments = Attachments(taps=[tracker, *(extra_taps or [])])
    if request.output_format == "stream-json":
        attachments.taps.append(StreamJsonPrinter(out, request.options.include_partial_messages))
    options = attach_gateway(
        request.prompt, request.options, request.policy_paths, attachments, err
    )
    try:
        async for _ in query(prompt=request.prompt, options=options, attachments=attachments):
            pass  # the taps see everything; reading to the end is what matters
    except ClaudeSDKError as exc:
        if tracker.last is None:
            print(f"agent-gateway run: error: {_one_line(exc)}", file=err)
            return 1
        # Claude Code exits nonzero after an error result; the result already says why.
    result = tracker.last
    if result is None:
        print("agent-gateway run: error: the agent ended without a result", file=err)
        return 1
    if request.output_format == "json":
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    elif request.output_format == "text" and result.get("result"):
        out.write(str(result["result"]) + "\n")
    failure = result_failure(result)
    if failure:
        print(f"agent-gateway run: {failure}", file=err)
        return 1
    return 0


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:500] or type(exc).__name__
