"""`agent-gateway serve` started in an untrusted directory (a repository that holds a `gateway`
package, or one named like a standard module) runs only the installed code: every Python
process it starts (the decision workers' forkserver, multiprocessing's resource tracker)
imports nothing from that directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.server.processes import free_port

PLANT = "import pathlib; pathlib.Path({marker!r}).write_text('ran from the cwd')\n"


def test_serve_in_a_directory_with_a_planted_gateway_package_runs_the_installed_code(
        tmp_path: Path) -> None:
    cwd, marker = tmp_path / "untrusted-repo", tmp_path / "planted-code-ran"
    for package in ("gateway", "multiprocessing", "json"):
        (cwd / package).mkdir(parents=True)
        (cwd / package / "__init__.py").write_text(PLANT.format(marker=str(marker)))
    (cwd / "gateway" / "__main__.py").write_text(PLANT.format(marker=str(marker)))
    policy = tmp_path / "policy.yaml"
    policy.write_text("version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHON"))}
    env.update(AGENT_GATEWAY_HOME=str(tmp_path / "home"), OTEL_TRACES_EXPORTER="none")
    env.pop("AGENT_GATEWAY_TOKEN", None)
    cli = Path(sys.executable).parent / "agent-gateway"
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [str(cli), "serve", "--port", str(port), "--policy", str(policy), "--upstream",
         "http://127.0.0.1:9"], cwd=cwd, env=env, stdout=log, stderr=log)
    try:
        answer = _ask(f"http://127.0.0.1:{port}", {
            "hook_event_name": "PreToolUse", "session_id": "s1", "tool_use_id": "t1",
            "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "cwd": str(cwd)})
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
    assert not marker.exists(), (tmp_path / "serve.log").read_text()[-2000:]


def _ask(url: str, body: dict[str, object]) -> dict[str, object]:
    deadline = time.monotonic() + 20
    while True:
        try:
            request = urllib.request.Request(
                url + "/hooks/PreToolUse", data=json.dumps(body).encode(), method="POST",
                headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as response:
                return dict(json.loads(response.read()))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
