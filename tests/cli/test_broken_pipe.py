"""Every printing command ends quietly when its reader has gone (`... | head`)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.compaction import CompactionSettings
from gateway.handlers.compact import archive_before_compact
from tests.archive.conftest import Session
from tests.audit.tamper import fill

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm -rf:*)']\n"


@pytest.fixture
def home(tmp_path: Path, make_session: Callable[..., Session]) -> Path:
    """A gateway home holding an archive and audit records, so every command has output."""
    home = Path(os.environ["AGENT_GATEWAY_HOME"])  # set by make_session's projects fixture
    outcome = archive_before_compact(make_session().request(), CompactionSettings(), "")
    assert outcome.archive_id
    fill(home / "audit.jsonl", 50)
    (tmp_path / "org.yaml").write_text(POLICY)
    (tmp_path / "org.tests.yaml").write_text(
        "cases:\n  - {name: rm, tool: Bash, input: {command: rm -rf x}, expect: deny}\n")
    (tmp_path / "input.json").write_text(
        '{"tool_name": "Bash", "tool_input": {"command": "rm -rf x"}, "session_id": "s"}')
    return home


def _filled(argv: list[str], home: Path) -> list[str]:
    return [_archive_id(home) if a == "ARCHIVE" else str(home / "audit.jsonl") if a == "AUDIT"
            else a for a in argv]


def _archive_id(home: Path) -> str:
    out = subprocess.run([sys.executable, "-m", "gateway", "archive", "list"],
                         capture_output=True, text=True, check=True, env=os.environ.copy())
    return out.stdout.split()[0]


COMMANDS: list[list[str]] = [
    ["--help"],
    ["run", "--help"],
    ["archive", "list"],
    ["archive", "show", "ARCHIVE"],
    ["archive", "verify"],
    ["audit", "list"],
    ["audit", "list", "--json"],
    ["audit", "show", "1"],
    ["audit", "verify"],
    ["policy", "check", "org.yaml"],
    ["policy", "test", "org.yaml"],
    ["policy", "explain", "--policy", "org.yaml", "--input", "input.json"],
    ["policy", "explain", "--policy", "org.yaml", "--tool", "Bash", "--command", "rm -rf x"],
    ["policy", "replay", "--policy", "org.yaml", "AUDIT"],
    ["policy", "replay", "--policy", "org.yaml", "--jsonl", "-", "AUDIT"],
    ["settings", "--url", "http://127.0.0.1:8787", "--policy", "org.yaml"],
    ["trace", "show"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_closed_reader_ends_quietly(home: Path, tmp_path: Path, argv: list[str]) -> None:
    argv = _filled(argv, home)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte
    try:
        proc = subprocess.run([sys.executable, "-m", "gateway", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120,
                              check=False, env=os.environ.copy())
    finally:
        os.close(write_end)
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "Errno 32" not in proc.stderr
    # `trace show` finds no trace in this home and says so on stderr (exit 1)
    assert proc.returncode == (1 if argv == ["trace", "show"] else 0), proc.stderr


def test_a_hook_whose_answer_cannot_be_written_blocks(home: Path, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    hook_input = b'{"tool_name": "Bash", "tool_input": {"command": "ls"}, "session_id": "s"}'
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "gateway", "hook", "pre-tool-use", "--policy", "org.yaml"],
            input=hook_input, stdout=write_end, stderr=subprocess.PIPE, cwd=tmp_path,
            timeout=60, check=False, env=os.environ.copy())
    finally:
        os.close(write_end)
    assert proc.returncode == 2
    assert proc.stderr.decode().count("\n") == 1


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("argv", [a for a in COMMANDS if a[-1] != "--help"], ids=" ".join)
def test_output_that_cannot_be_written_is_one_line_and_a_failure(
    home: Path, tmp_path: Path, argv: list[str]
) -> None:
    """stdout on a full disk: one line naming the error, a failing exit, no traceback."""
    argv = _filled(argv, home)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "gateway", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=120,
                              check=False, env=os.environ.copy())
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (1, 2) and proc.stderr.count("\n") == 1, proc.stderr
    if argv != ["trace", "show"]:  # which has nothing to print in this home, and says so
        assert "No space left on device" in proc.stderr, proc.stderr
