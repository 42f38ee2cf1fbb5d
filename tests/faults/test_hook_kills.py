"""SIGKILL command hooks (`agent-gateway hook pre-tool-use`, one process per tool call) at
random instants while others run beside them. A killed hook answers nothing (Claude Code,
with the generated settings' onFailure: block, blocks the call); after all of them the audit
log verifies without a key, and every hook that answered is recorded."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.trail import POLICY, Answered, check_trail, decision_of, hook_input, times

ROOT = Path(__file__).resolve().parents[2]
CONCURRENT = 4

pytestmark = pytest.mark.faults


def test_sigkill_command_hooks_at_random_instants(tmp_path: Path) -> None:
    policy, home = tmp_path / "policy.yaml", tmp_path / "home"
    policy.write_text(POLICY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_GATEWAY_", "OTEL_"))}
    env.update(AGENT_GATEWAY_HOME=str(home), PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "gateway", "hook", "pre-tool-use", "--policy", str(policy)]
    rng = random.Random(24)
    answered: dict[str, Answered] = {}
    killed = 0
    hooks = times(40, 400)
    # Hooks of about 0.1 s each, killed at a uniformly random instant of their life (most
    # often while they decide, now and then while they record).
    running: list[tuple[str, subprocess.Popen[bytes], float]] = []
    started = 0
    while started < hooks or running:
        while started < hooks and len(running) < CONCURRENT:
            tool_use_id = f"toolu_{started}"
            proc = subprocess.Popen(command, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(hook_input(tool_use_id, ("echo hi", "rm -rf x")[
                started % 2])).encode())
            proc.stdin.close()
            proc.stdin = None  # written whole: communicate() only reads
            kill_at = time.monotonic() + rng.random() * 0.2 if rng.random() < 0.7 else math.inf
            running.append((tool_use_id, proc, kill_at))
            started += 1
        time.sleep(0.002)
        for n, (tool_use_id, proc, kill_at) in enumerate(running):
            if proc.poll() is None and time.monotonic() >= kill_at:
                proc.send_signal(signal.SIGKILL)
                killed += 1
                running[n] = (tool_use_id, proc, math.inf)  # once
        for entry in [e for e in running if e[1].poll() is not None]:
            tool_use_id, proc, _ = entry
            running.remove(entry)
            out, _ = proc.communicate()
            if proc.returncode == 0:
                answered[tool_use_id] = Answered(decision_of(json.loads(out)))
    check_trail(home / "audit.jsonl", answered)
    assert killed > hooks // 4 and answered
    print(f"{hooks} hooks, {killed} killed, {len(answered)} answered")
