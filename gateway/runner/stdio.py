"""Claude Code's stdin and stdout as socket pairs, not pipes.

Any process of the same user can open another's pipe through /proc/<pid>/fd/N and write into
it: a command the agent runs could put lines of its own making into Claude Code's stdout (a
message the run's tracer, budget and output believe; under claude-agent-sdk, a `hook_callback`
control request the gateway's PreToolUse callback decides and records) or into its stdin (a
control request to Claude Code). A socket cannot be opened through /proc (ENXIO), so only the
gateway and Claude Code hold these (measured with 2.1.332: Claude Code reads and writes its
stream over them as over pipes, and the commands it runs inherit neither).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass


class SocketStdio:
    """Two connected socket pairs: Claude Code's ends become its fd 0 and 1 when it starts
    (`child_stdin`, `child_stdout`), the gateway keeps the others."""

    def __init__(self) -> None:
        self._stdin, self._child_stdin = socket.socketpair()
        self._stdout, self._child_stdout = socket.socketpair()
        # Claude Code reads its input only; what it writes back there is nobody's.
        self._child_stdin.shutdown(socket.SHUT_WR)

    @property
    def child_stdin(self) -> int:
        return self._child_stdin.fileno()

    @property
    def child_stdout(self) -> int:
        return self._child_stdout.fileno()

    def started(self) -> None:
        """Claude Code has its ends (or did not start): close them here, so that its exit
        is the end of its output."""
        self._child_stdin.close()
        self._child_stdout.close()

    def take(self) -> tuple[socket.socket, socket.socket]:
        """The gateway's ends, (to Claude Code's stdin, from its stdout), now the caller's."""
        return self._stdin, self._stdout

    def close(self) -> None:
        for sock in (self._stdin, self._stdout, self._child_stdin, self._child_stdout):
            sock.close()


@dataclass
class Streams:
    """asyncio streams over the gateway's ends: `stdin` writes Claude Code's input (write_eof
    ends it), `stdout` reads its output."""

    stdin: asyncio.StreamWriter
    stdout: asyncio.StreamReader
    _stdout_side: asyncio.StreamWriter

    def close(self) -> None:
        self.stdin.close()
        self._stdout_side.close()


async def open_streams(stdio: SocketStdio, limit: int) -> Streams:
    """Streams over `stdio`'s gateway ends, which they own from then on; lines of Claude
    Code's output up to `limit` bytes."""
    to_claude, from_claude = stdio.take()
    try:
        stdout, stdout_side = await asyncio.open_unix_connection(sock=from_claude, limit=limit)
        _, stdin = await asyncio.open_unix_connection(sock=to_claude)
    except BaseException:
        with contextlib.suppress(OSError):
            stdio.close()
        raise
    return Streams(stdin, stdout, stdout_side)
