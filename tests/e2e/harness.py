"""Runs the real Claude Code (bundled in claude-agent-sdk) offline against the scripted API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import claude_agent_sdk

CLAUDE_BIN = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
SANDBOX_MISSING = [name for name in ("bwrap", "socat") if shutil.which(name) is None]
"""What Claude Code's OS sandbox needs on Linux and this host lacks (`.ci/run` installs it)."""
SANDBOX_REASON = (f"Claude Code's OS sandbox needs bubblewrap and socat "
                  f"({', '.join(SANDBOX_MISSING)} missing; `.ci/run` installs them)")


@dataclass
class RunOutcome:
    returncode: int
    stdout: str
    stderr: str
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def results(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == "result"]

    @property
    def result(self) -> dict[str, Any]:
        assert self.results, f"no result message; stderr: {self.stderr[-2000:]}"
        return self.results[-1]

    @property
    def session_id(self) -> str:
        return str(self.result["session_id"])

    def tool_results(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        for m in self.messages:
            content = m.get("message", {}).get("content") if m.get("type") == "user" else None
            if isinstance(content, list):
                blocks.extend(b for b in content if b.get("type") == "tool_result")
        return blocks


@dataclass
class Sandbox:
    """A temp HOME and workspace, and the environment that points Claude Code at a server."""

    home: Path
    cwd: Path
    gateway_home: Path
    base_url: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self, **overrides: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "OTEL_", "TRACE"))
        }
        env.update(
            {
                "HOME": str(self.home),
                "ANTHROPIC_API_KEY": "scripted-test-key",
                "ANTHROPIC_BASE_URL": self.base_url,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_RETRIES": "1",
                "AGENT_GATEWAY_HOME": str(self.gateway_home),
                "OTEL_TRACES_EXPORTER": "none",
            }
        )
        env.update(self.extra_env)
        env.update(overrides)
        return env

    @property
    def projects_root(self) -> Path:
        return self.home / ".claude" / "projects"


def parse_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip().startswith("{")]


def gateway_run(
    sandbox: Sandbox,
    prompt: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
    wrapper: Sequence[str] = (),
) -> RunOutcome:
    """`agent-gateway run PROMPT --output-format stream-json ARGS` as a real subprocess;
    `wrapper`: a command that runs it (as_the_same_user())."""
    cmd = [*wrapper, sys.executable, "-m", "gateway", "run", prompt, "--output-format",
           "stream-json", *args]
    return _run(cmd, sandbox, env, timeout)


def as_the_same_user() -> list[str]:
    """A command prefix that runs a gateway process so that the agent it starts is what it is
    in production, a process of the same user and no more: here, as root, without root's
    capabilities (which let any process read another's /proc/<pid>/environ)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        import pytest

        pytest.skip("running as root, and setpriv (util-linux) is missing to drop capabilities")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all"]


def gateway_cli(
    sandbox: Sandbox,
    *args: str,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> RunOutcome:
    return _run([sys.executable, "-m", "gateway", *args], sandbox, env, timeout, stdin)


def claude_run(
    sandbox: Sandbox,
    prompt: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 180,
) -> RunOutcome:
    """The bare Claude Code binary, not through the gateway."""
    cmd = [str(CLAUDE_BIN), "-p", prompt, "--output-format", "stream-json", "--verbose", *args]
    return _run(cmd, sandbox, env, timeout)


def _run(
    cmd: Sequence[str],
    sandbox: Sandbox,
    env: Mapping[str, str] | None,
    timeout: float,
    stdin: str | None = None,
) -> RunOutcome:
    proc = subprocess.run(
        list(cmd),
        cwd=sandbox.cwd,
        env=dict(env or sandbox.env()),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return RunOutcome(proc.returncode, proc.stdout, proc.stderr, parse_lines(proc.stdout))


def post_ndjson(
    url: str, token: str, path: str, body: dict[str, Any]
) -> tuple[int, list[dict[str, Any]]]:
    """POST JSON with a bearer token; the status and the answer's JSON lines (an error: one)."""
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            lines = response.read().decode().splitlines()
            return response.status, [json.loads(line) for line in lines if line.strip()]
    except urllib.error.HTTPError as exc:
        return exc.code, [json.loads(exc.read() or b"{}")]


def print_settings(url: str, path: Path, *policies: str) -> subprocess.CompletedProcess[str]:
    """What a user does: `agent-gateway settings --url URL [--policy P] > path`."""
    args = [arg for p in policies for arg in ("--policy", p)]
    printed = subprocess.run(
        [sys.executable, "-m", "gateway", "settings", "--url", url, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    path.write_text(printed.stdout)
    return printed
