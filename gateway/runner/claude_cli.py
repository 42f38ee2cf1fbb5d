"""Claude Code driven through its public command line: `claude -p --input-format stream-json
--output-format stream-json --verbose`, the prompt as one JSON line on stdin, every message
back as one JSON line on stdout. What `agent-gateway run` runs the agent with, without
importing claude_agent_sdk (about a second of start-up): the binary it bundles is found
on disk, and the gateway's hooks reach Claude Code as http hooks in `--settings`.

The flags are those claude-agent-sdk gives the binary for the same options (an empty system
prompt among them), so a run behaves the same either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gateway.env import snapshot
from gateway.errors import ConfigError, GatewayError, one_line
from gateway.runner.agent_env import local_agent_env
from gateway.runner.options import RunOptions
from gateway.runner.stdio import SocketStdio, Streams, open_streams

log = logging.getLogger("gateway.runner.claude_cli")

LINE_LIMIT = 64 * 1024 * 1024
"""The longest stdout line read (a message carrying a large file)."""
STOP_GRACE_S = 5.0


class ClaudeCodeFailed(GatewayError):
    """Claude Code could not be started, or its output could not be read."""

    exit_code = 1


def claude_binary() -> str:
    """The Claude Code binary claude-agent-sdk bundles (found without importing the SDK),
    else `claude` on PATH."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    for location in (spec.submodule_search_locations or []) if spec else []:
        bundled = Path(location, "_bundled", "claude")
        if bundled.is_file():
            return str(bundled)
    found = shutil.which("claude")
    if found is None:
        raise ClaudeCodeFailed("Claude Code not found: neither the binary claude-agent-sdk "
                               "bundles nor `claude` on PATH")
    return found


def merged_settings(options: RunOptions, gateway: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's settings (a file or JSON) with the gateway's hooks before their own, its
    denies beside theirs and its sandbox (if any) over theirs."""
    return merge_settings(load_settings(options.settings, options.cwd), gateway)


def load_settings(value: str | None, cwd: str | None) -> dict[str, Any]:
    """Settings given as a file path (relative to `cwd`) or JSON; {} for None."""
    return _load_settings(value, cwd) if value else {}


def merge_settings(theirs: Mapping[str, Any], gateway: Mapping[str, Any]) -> dict[str, Any]:
    """`theirs` with the gateway's hooks before their own, its denies beside theirs and its
    sandbox (if any) over theirs."""
    merged = {**theirs, **{k: v for k, v in gateway.items()
                           if k not in ("hooks", "permissions", "sandbox")}}
    hooks = dict(theirs.get("hooks") or {})
    for event, matchers in gateway.get("hooks", {}).items():
        hooks[event] = [*matchers, *(hooks.get(event) or [])]
    merged["hooks"] = hooks
    for key in ("allowedHttpHookUrls", "httpHookAllowedEnvVars"):
        if key in theirs and key in gateway:
            merged[key] = [*gateway[key], *theirs[key]]
    if "permissions" in gateway:
        permissions = dict(_object(theirs, "permissions"))
        permissions["deny"] = [*gateway["permissions"].get("deny", []),
                               *_list(permissions.get("deny"))]
        merged["permissions"] = permissions
    if "sandbox" in gateway:
        merged["sandbox"] = _merged_sandbox(_object(theirs, "sandbox"), gateway["sandbox"])
    return merged


def _merged_sandbox(theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """The policy's sandbox over the caller's. Of theirs only what narrows it is kept (more
    denied paths and hosts, a shorter host list) and `enableWeakerNestedSandbox`, which some
    containers need (docs/sandbox.md): nothing that runs commands outside it, lets them
    create namespaces or sockets, or turns its filesystem rules off."""
    merged: dict[str, Any] = {k: v for k, v in theirs.items()
                              if k == "enableWeakerNestedSandbox"}
    merged.update({k: v for k, v in ours.items() if k not in ("filesystem", "network")})
    for section, narrowing in (("filesystem", ("denyRead", "denyWrite")),
                               ("network", ("deniedDomains",))):
        mine, yours = dict(ours.get(section) or {}), _object(theirs, section)
        for key in narrowing:
            extra = [v for v in _list(yours.get(key)) if v not in mine.get(key, [])]
            if extra:
                mine[key] = [*mine.get(key, []), *extra]
        merged[section] = mine
    allowed = _object(theirs, "network").get("allowedDomains")
    if isinstance(allowed, list) and merged["network"].get("allowedDomains") == ["*"]:
        merged["network"]["allowedDomains"] = allowed  # the caller's narrower list stands
    return merged


def _object(settings: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = settings.get(key)
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _load_settings(value: str, cwd: str | None) -> dict[str, Any]:
    text = value.strip()
    try:
        if not text.startswith("{"):
            # A file, read as Claude Code reads it: relative to its cwd, BOM or not.
            text = Path(cwd or "", text).read_text(encoding="utf-8-sig")
        loaded = json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--settings: cannot be read: {one_line(exc)}") from None
    if not isinstance(loaded, dict):
        raise ConfigError("--settings: the JSON must be an object")
    if not isinstance(loaded.get("hooks", {}), dict):
        raise ConfigError("--settings: 'hooks' must be an object")
    return loaded


def command(options: RunOptions, settings: Mapping[str, Any] | None) -> list[str]:
    """The command line for `options`, with `settings` as --settings."""
    cmd = [claude_binary(), "-p", "--output-format", "stream-json", "--verbose",
           "--system-prompt", ""]
    if options.allowed_tools:
        cmd += ["--allowedTools", ",".join(options.allowed_tools)]
    if options.max_turns:
        cmd += ["--max-turns", str(options.max_turns)]
    if options.max_budget_usd is not None:
        cmd += ["--max-budget-usd", str(options.max_budget_usd)]
    if options.disallowed_tools:
        cmd += ["--disallowedTools", ",".join(options.disallowed_tools)]
    if options.model:
        cmd += ["--model", options.model]
    if options.permission_mode:
        cmd += ["--permission-mode", options.permission_mode]
    if options.resume:
        cmd.append(f"--resume={options.resume}")  # one token: a value never reads as a flag
    if settings is not None:
        cmd += ["--settings", json.dumps(settings)]
    cmd.append("--include-partial-messages")  # the gateway's taps read the partial stream
    if options.fork_session:
        cmd.append("--fork-session")
    for flag, value in options.extra_args.items():
        cmd.append(f"--{flag}" if value is None else f"--{flag}={value}")
    if options.effort is not None:
        cmd += ["--effort", options.effort]
    cmd += ["--input-format", "stream-json"]
    return cmd


def child_env(options: RunOptions, extra: Mapping[str, str]) -> dict[str, str]:
    """Claude Code's environment, which the agent's commands inherit (runner/agent_env.py)."""
    base = options.base_env
    env = dict(base) if base is not None else local_agent_env(snapshot())
    env.update(options.env)
    env.update(extra)
    if options.cwd:
        env["PWD"] = os.path.abspath(options.cwd)
    return env


async def run_claude(
    prompt: str,
    options: RunOptions,
    settings: Mapping[str, Any] | None,
    extra_env: Mapping[str, str],
    on_message: Callable[[dict[str, Any]], None],
    on_start: Callable[[int], None] | None = None,
) -> int:
    """Run to the end of Claude Code's output; each JSON object it prints goes to
    `on_message` on this loop; `on_start` is told its pid before it is given the prompt.
    Returns its exit status; stopped when cancelled."""
    cmd = command(options, settings)
    stdio = SocketStdio()  # not pipes, which the agent's commands could write into
    try:
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdin=stdio.child_stdin, stdout=stdio.child_stdout,
            cwd=options.cwd, env=child_env(options, extra_env),
        )
    except OSError as exc:
        stdio.close()
        raise ClaudeCodeFailed(f"Claude Code did not start: {one_line(exc)}") from None
    stdio.started()
    streams: Streams | None = None
    try:
        if on_start is not None:
            on_start(proc.pid)
        streams = await open_streams(stdio, LINE_LIMIT)
        stdin, stdout = streams.stdin, streams.stdout
        user = {"type": "user", "session_id": "", "parent_tool_use_id": None,
                "message": {"role": "user", "content": prompt}}
        with contextlib.suppress(OSError):  # it exited already: its status says why
            stdin.write((json.dumps(user) + "\n").encode())
            await stdin.drain()
            stdin.write_eof()  # one prompt: Claude Code ends when the run (and its tasks) do
        while True:
            try:
                line = await stdout.readline()
            except ValueError as exc:  # a line over LINE_LIMIT
                raise ClaudeCodeFailed(f"Claude Code's output not read: {exc}") from None
            if not line:
                break
            message = _parse(line)
            if message is not None:
                on_message(message)
        return await proc.wait()
    finally:
        if proc.returncode is None:
            await _stop(proc)
        if streams is not None:
            streams.close()
        else:
            stdio.close()


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        if line.strip():
            log.debug("not a JSON line from Claude Code: %r", line[:200])
        return None
    return message if isinstance(message, dict) else None


async def _stop(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), STOP_GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
