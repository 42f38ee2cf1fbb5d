"""claude-agent-sdk's subprocess transport with Claude Code's stdin and stdout as socket pairs
(runner/stdio.py), for `gateway.query`.

Under the SDK, the gateway's PreToolUse callback answers `hook_callback` control requests that
arrive on Claude Code's stdout. Through a pipe, a command the agent runs could write such a
request itself (reopening the pipe as /proc/<claude pid>/fd/1), and the gateway would decide
and record a tool call that never was. A socket cannot be reopened that way.

The SDK spawns Claude Code with `anyio.open_process(..., stdin=PIPE, stdout=PIPE)` inside its
`connect()`, which also builds the command and environment; rather than copy that, the SDK
module's `anyio` is given an `open_process` that hands the child the socket ends while one of
these transports connects (a context variable says which). Should a later SDK spawn Claude
Code some other way, the transport logs a warning and runs on the SDK's pipes.
"""

from __future__ import annotations

import contextvars
import logging
from types import ModuleType
from typing import Any

import anyio
from anyio.abc import UNIXSocketStream
from anyio.streams.text import TextReceiveStream, TextSendStream
from claude_agent_sdk._internal.transport import subprocess_cli
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

from gateway.runner.stdio import SocketStdio

log = logging.getLogger("gateway.runner.sdk_transport")

_CONNECTING: contextvars.ContextVar[SocketStdio | None] = contextvars.ContextVar(
    "agent_gateway_socket_stdio", default=None
)


class _Anyio(ModuleType):
    """anyio as the SDK's transport module sees it: the same, but for `open_process` while a
    SocketCLITransport connects."""

    def __init__(self) -> None:
        super().__init__("anyio")

    def __getattr__(self, name: str) -> Any:
        return getattr(anyio, name)

    async def open_process(self, command: Any, **kwargs: Any) -> Any:
        stdio = _CONNECTING.get()
        if stdio is not None:
            kwargs.update(stdin=stdio.child_stdin, stdout=stdio.child_stdout)
        return await anyio.open_process(command, **kwargs)


if not isinstance(getattr(subprocess_cli, "anyio", None), _Anyio):
    setattr(subprocess_cli, "anyio", _Anyio())  # noqa: B010 (not an exported name)


class SocketCLITransport(SubprocessCLITransport):
    async def connect(self) -> None:
        stdio = SocketStdio()
        token = _CONNECTING.set(stdio)
        try:
            await super().connect()
        except BaseException:
            stdio.close()
            raise
        finally:
            _CONNECTING.reset(token)
        stdio.started()
        process = self._process
        if process is None or process.stdout is not None:
            stdio.close()
            log.warning("claude-agent-sdk started Claude Code without the gateway's socket "
                        "stdio: its stdout is a pipe the agent's commands can write into")
            return
        to_claude, from_claude = stdio.take()
        self._stdout_stream = TextReceiveStream(await UNIXSocketStream.from_socket(from_claude))
        self._stdin_stream = TextSendStream(await UNIXSocketStream.from_socket(to_claude))

    async def close(self) -> None:
        stdout = self._stdout_stream
        try:
            await super().close()
        finally:
            if stdout is not None:
                await stdout.aclose()
