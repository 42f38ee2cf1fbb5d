"""Claude Code's stdin and stdout are socket pairs: a process of the same user cannot reopen
them through /proc/<pid>/fd and write lines of its own into the stream."""

from __future__ import annotations

import asyncio
import errno
import subprocess
import sys

import pytest

from gateway.runner.stdio import SocketStdio, open_streams

ECHO = "import sys\nfor line in sys.stdin: sys.stdout.write(line.upper())\n"


def test_a_child_reads_its_input_and_writes_its_output_over_the_pairs() -> None:
    async def run() -> list[bytes]:
        stdio = SocketStdio()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", ECHO, stdin=stdio.child_stdin, stdout=stdio.child_stdout)
        stdio.started()
        streams = await open_streams(stdio, 1024)
        streams.stdin.write(b"one\ntwo\n")
        await streams.stdin.drain()
        streams.stdin.write_eof()
        lines = [line async for line in streams.stdout]
        await proc.wait()
        streams.close()
        return lines

    assert asyncio.run(run()) == [b"ONE\n", b"TWO\n"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/fd is Linux's")
def test_another_process_cannot_reopen_them() -> None:
    stdio = SocketStdio()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             stdin=stdio.child_stdin, stdout=stdio.child_stdout)
    stdio.started()
    try:
        for fd in (0, 1):
            with pytest.raises(OSError) as refused:
                open(f"/proc/{child.pid}/fd/{fd}", "w").close()
            assert refused.value.errno == errno.ENXIO
    finally:
        child.kill()
        child.wait()
        stdio.close()
