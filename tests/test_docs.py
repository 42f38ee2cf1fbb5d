"""README.md and docs/*.md: every shell and Python block is either run here, as written, or
says why it is not, so no documented command goes stale.

A block runs when the line above its fence is `<!-- runnable -->`; `<!-- runnable: background
-->` starts long-running commands, one per line (a scripted API, `serve`), and waits for each
to say it is ready, and a later background block first stops the earlier ones, as the
reader's Ctrl-C would. `<!-- not
runnable: why -->` exempts a block. One document's blocks run in order in one bash session, in a
scratch directory holding copies of policies/ and examples/, with its own HOME and
AGENT_GATEWAY_HOME, offline, with the Claude Code the SDK bundles as `claude` on PATH;
the only change made to the text is free ports for 8788 and 8787.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.harness import CLAUDE_BIN

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE_LANGUAGES = {"sh", "bash", "shell", "console", "python", "py"}
MARKER = re.compile(r"^\s*<!-- (runnable|runnable: background|not runnable: .+) -->\s*$")
FENCE = re.compile(r"^\s*```([\w-]*)\s*$")
PORTS = ("8788", "8787")
"""Ports the documents name (the scripted API's, serve's): each run gets free ones."""
# What each document's run must show, beyond succeeding.
EXPECTED = {
    "README.md": [
        # run's progress lines: the read through a computed path left to the sandbox, which
        # stops it, and the rm -rf denied by the hook; or, where the sandbox cannot start, run
        # says what it needs and denies Bash
        *(["left to the OS sandbox [org.yaml:permissions.deny[10]]", "Permission denied",
           "-> deny [org.yaml:permissions.deny[1]]"]
          if shutil.which("bwrap") and shutil.which("socat") else
          ["which cannot start here: bubblewrap", "-> deny [builtin:sandbox-required]"]),
        "success: 4 turns, $",
        "execute_tool Bash",  # trace show
        "rm -rf build/",  # audit list
        "decision: deny",  # policy explain
        "ResultMessage",  # the Python example
        "transcript archived before compaction: ",
        "archive verify: OK, 1 archives",
        "compaction ",
        # the gateway section, through serve: auth off, then on
        "runs with authentication off: the settings send no token",
        "auth off, remote runs off", "auth on, remote runs off",
        "sessions need `export AGENT_GATEWAY_TOKEN=",
        "refused the recursive delete",
    ],
    "policy.md": ["0 failed", "rule: org.yaml:permissions.deny[1]", "Read(**/.env)",
                  "  abstain -> deny: 1", '"rule_id": "team.yaml:permissions.deny[1]"'],
    "audit.md": ["audit verify: OK, 0 records"],
    "archive.md": ["archive verify: OK, 0 archives", "audit verify: OK, 0 records"],
    "scripted-api.md": ["scripted-api: prompt request -> response 1"],
    "service.md": [],
    "sandbox.md": ["enforced by: sandbox", "decision: deny", "enforced by: hook"],
}

COUNTS = {"README.md": {
    # the tour's `run`, then `claude -p` through serve with authentication off and on
    "refused the recursive delete, so nothing was removed": 3,
}}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    marker: str | None
    text: str


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        language = opening.group(1)
        body: list[str] = []
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            body.append(lines[end])
            end += 1
        previous = next((line for line in reversed(lines[:index]) if line.strip()), "")
        marked = MARKER.match(previous)
        found.append(Block(path, index + 1, language, marked.group(1) if marked else None,
                           textwrap.dedent("\n".join(body)) + "\n"))
        index = end + 1
    return found


def runnable(path: Path) -> list[Block]:
    return [b for b in blocks(path) if b.marker in ("runnable", "runnable: background")]


def test_every_code_block_is_run_or_says_why_not() -> None:
    unmarked = [f"{b.path.relative_to(ROOT)}:{b.line}" for path in DOCS for b in blocks(path)
                if b.language in CODE_LANGUAGES and b.marker is None]
    assert unmarked == []
    assert all(b.language in ("sh", "python") for path in DOCS for b in runnable(path))
    assert {p.name for p in DOCS if runnable(p)} == set(EXPECTED)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def script(documented: list[Block], ports: dict[str, int]) -> str:
    parts = [
        "set -euo pipefail",
        "background=''",
        "stop_background() { for pid in $background; do kill \"$pid\" 2>/dev/null || true; "
        "wait \"$pid\" 2>/dev/null || true; done; background=''; }",
        "trap stop_background EXIT",
    ]
    for number, block in enumerate(documented):
        where = f"# {block.path.name}:{block.line}"
        text = block.text
        for documented_port, free in ports.items():
            text = text.replace(documented_port, str(free))
        if block.marker == "runnable: background":
            # one long-running command per line, started together (a reader's terminals);
            # each is waited for until it says it is ready
            parts += [where, "stop_background"]
            for line_number, command in enumerate(text.strip().splitlines()):
                name = f"background-{number}-{line_number}"
                parts += [
                    f"{command.strip()} > {name}.out 2> {name}.err &",
                    "background=\"$background $!\"",
                    f"for _ in $(seq 300); do grep -qs -e '^export ' -e 'listening on' "
                    f"{name}.out {name}.err && break; sleep 0.1; done",
                    f"grep -qs -e '^export ' -e 'listening on' {name}.out {name}.err "
                    f"|| {{ cat {name}.err; exit 1; }}",
                ]
        elif block.language == "python":
            parts += [where, f"python - <<'PYTHON_BLOCK'\n{text}PYTHON_BLOCK"]
        else:
            parts += [where, text]
    parts.append("cat background-*.err 2>/dev/null || true")
    return "\n".join(parts) + "\n"


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "OTEL_", "TRACE", "AGENT_GATEWAY_"))
    }
    # `claude` on PATH, as for a reader who runs it: the binary the SDK bundles
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir(exist_ok=True)
    claude.symlink_to(CLAUDE_BIN)
    env.update(
        HOME=str(tmp_path / "home"),
        AGENT_GATEWAY_HOME=str(tmp_path / "gateway-home"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), str(claude.parent),
                              env.get("PATH", "")]),
        COLUMNS="200",
    )
    return env


def _document(name: str) -> object:
    path = ROOT / name if name == "README.md" else ROOT / "docs" / name
    # The tours start the real Claude Code; the reference pages run CLI commands only.
    starts_claude = any(b.marker == "runnable: background" for b in runnable(path))
    return pytest.param(path, id=name, marks=[pytest.mark.e2e] if starts_claude else [])


@pytest.mark.parametrize("path", [_document(name) for name in EXPECTED])
def test_documented_commands_run_as_written(path: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "home").mkdir()
    for directory in ("policies", "examples"):
        shutil.copytree(ROOT / directory, work / directory)
    proc = subprocess.run(
        ["bash", "-c", script(runnable(path), {p: _free_port() for p in PORTS})], cwd=work,
        env=_environment(tmp_path), capture_output=True, text=True, timeout=600, check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    assert "Traceback" not in output, output[-6000:]
    for expected in EXPECTED[path.name]:
        assert expected in output, f"{expected!r} not in the output:\n{output[-6000:]}"
    for expected, times in COUNTS.get(path.name, {}).items():
        assert output.count(expected) == times, output[-6000:]
