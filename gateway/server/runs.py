"""POST /v1/runs: the options of `agent-gateway run` as JSON in, NDJSON messages out.

Each message Claude Code writes is one line, as `agent-gateway run --output-format
stream-json` prints it; a last line `{"type": "gateway_exit", "exit_code": N, "errors": [...]}`
says how the run ended. The caller's policy layers come from its token. `settings` is refused:
a remote caller must not add hooks (commands) to the gateway host. `cwd` is required and must
resolve, symlinks included, inside one of the caller's runs roots.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict, cast

from gateway.types import JSONObject

if TYPE_CHECKING:
    from gateway.runner.account import RunAccount
    from gateway.runner.hook_answers import Decide

_STRINGS = ("cwd", "model", "permission_mode", "effort", "resume")
_REMOTE_PERMISSION_MODES = frozenset({"default", "acceptEdits", "plan", "dontAsk"})


class RunRefused(Exception):
    """A run request the gateway will not start: `status` is the 4xx, `str()` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


OUTSIDE_ROOTS = "'cwd' is outside this token's runs roots"
"""The one answer for any cwd that resolves outside the roots, whatever is there: nothing
about the host (whether a path exists, where a symlink points) is told to a caller."""


def confine_cwd(cwd: str, roots: Sequence[str]) -> str:
    """The real path of `cwd` when it is a directory inside one of `roots` (symlinks
    resolved); RunRefused 403 with OUTSIDE_ROOTS for anything outside them."""
    if not os.path.isabs(cwd):
        raise RunRefused(400, "'cwd' must be an absolute path")
    real = os.path.realpath(cwd)
    for root in roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
            if not os.path.isdir(real):  # inside the caller's own roots: it may know
                raise RunRefused(400, f"'cwd' {cwd} is not a directory")
            return real
    raise RunRefused(403, OUTSIDE_ROOTS)


class RunOptions(TypedDict, total=False):
    """The options a remote run may set, with ClaudeAgentOptions' names and types."""

    cwd: str
    model: str
    permission_mode: Literal["default", "acceptEdits", "plan", "dontAsk"]
    effort: Literal["low", "medium", "high", "xhigh", "max"]
    resume: str
    allowed_tools: list[str]
    disallowed_tools: list[str]
    max_turns: int
    max_budget_usd: float
    fork_session: bool


class RunBody(RunOptions, total=False):
    """POST /v1/runs: the prompt and the run's options (`parse_run_request` checks each)."""

    prompt: str
    include_partial_messages: bool


class GatewayExit(TypedDict):
    """The last NDJSON line of a remote run."""

    type: Literal["gateway_exit"]
    exit_code: int
    errors: list[str]


@dataclass(frozen=True)
class RunSpec:
    """A validated remote run: plain values until the SDK is imported to run it."""

    prompt: str
    options: RunOptions
    policy_paths: tuple[str, ...]
    include_partial_messages: bool = False


_KNOWN = RunBody.__required_keys__ | RunBody.__optional_keys__


def parse_run_request(body: JSONObject, policy_paths: Sequence[str]) -> RunSpec:
    """Validate the JSON body; ValueError names the offending key."""
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        raise ValueError(f"unknown run option(s): {', '.join(unknown)}")
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise ValueError("'prompt' must be a non-empty string")
    strings: dict[str, str] = {}
    for key in _STRINGS:
        value = body.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise ValueError(f"'{key}' must be a string")
            strings[key] = value
    mode = strings.get("permission_mode")
    if mode is not None and mode not in _REMOTE_PERMISSION_MODES:
        # bypassPermissions would let every call the policy abstains on run unasked.
        allowed = ", ".join(sorted(_REMOTE_PERMISSION_MODES))
        raise ValueError(f"'permission_mode' {mode!r} is not allowed for remote runs ({allowed})")
    # Checked above (the mode) or below, by Claude Code (the effort level, the model).
    options = cast(RunOptions, strings)
    if (allowed_tools := _string_list(body, "allowed_tools")) is not None:
        options["allowed_tools"] = allowed_tools
    if (disallowed_tools := _string_list(body, "disallowed_tools")) is not None:
        options["disallowed_tools"] = disallowed_tools
    if body.get("max_turns") is not None:
        turns = body["max_turns"]
        if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
            raise ValueError("'max_turns' must be an integer >= 1")
        options["max_turns"] = turns
    if body.get("max_budget_usd") is not None:
        budget = body["max_budget_usd"]
        if not isinstance(budget, int | float) or isinstance(budget, bool) or budget <= 0:
            raise ValueError("'max_budget_usd' must be a positive number")
        options["max_budget_usd"] = float(budget)
    if body.get("fork_session"):
        if not options.get("resume"):
            raise ValueError("'fork_session' needs 'resume'")
        options["fork_session"] = True
    partial = bool(body.get("include_partial_messages"))
    return RunSpec(prompt, options, tuple(policy_paths), partial)


def _string_list(body: JSONObject, key: str) -> list[str] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{key}' must be a list of strings")
    return [str(v) for v in value]


class _QueueWriter(io.StringIO):
    """A text stream whose lines go to an asyncio queue (same loop)."""

    def __init__(self, queue: asyncio.Queue[bytes | None]) -> None:
        self._queue = queue

    def write(self, text: str) -> int:
        if text:
            self._queue.put_nowait(text.encode("utf-8"))
        return len(text)


async def stream_run_lines(
    spec: RunSpec, agent_env: Mapping[str, str], account: RunAccount | None = None,
    decide: Decide | None = None,
) -> AsyncIterator[bytes]:
    """Run the agent on this loop; yield NDJSON bytes as messages arrive. `agent_env`: all
    the environment Claude Code gets (never serve's own); `account`: the team, metrics and
    budget it counts against; `decide`: where its PreToolUse calls are decided (serve's
    decision workers: never on this loop)."""
    from gateway.errors import GatewayError
    from gateway.runner.options import RunOptions as AgentOptions
    from gateway.runner.run import RunRequest, execute

    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    err = io.StringIO()
    request = RunRequest(
        prompt=spec.prompt,
        options=AgentOptions(
            include_partial_messages=spec.include_partial_messages, base_env=dict(agent_env),
            **spec.options,
        ),
        policy_paths=list(spec.policy_paths),
        output_format="stream-json",
    )

    async def run() -> int:
        try:
            return await execute(request, _QueueWriter(queue), err, None, account, decide)
        except GatewayError as exc:
            err.write(f"agent-gateway run: error: {exc}\n")
            return exc.exit_code
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(run())
    try:
        while (chunk := await queue.get()) is not None:
            yield chunk
        code = await task
    finally:
        if not task.done():
            task.cancel()  # the client went away: stop the agent
    errors = [line for line in err.getvalue().splitlines() if line.strip()]
    last: GatewayExit = {"type": "gateway_exit", "exit_code": code, "errors": errors}
    yield (json.dumps(last) + "\n").encode()
