"""SIGKILL `serve` (alone, or with all its processes at once, as a container is killed) and
its decision workers at random instants under a load of concurrent hook requests. After each
kill: the audit log verifies (no false tamper alarm, without a key), every decision answered
is recorded, and the gateway answers again."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from pathlib import Path

import pytest

from tests.faults.trail import (
    POLICY,
    UPSTREAM,
    Load,
    check_trail,
    decision_workers,
    descendants,
    reap,
    serve_env,
    times,
)
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.faults


def test_sigkill_serve_at_random_instants(tmp_path: Path) -> None:
    policy, home = tmp_path / "policy.yaml", tmp_path / "home"
    policy.write_text(POLICY)
    log = home / "audit.jsonl"
    rng = random.Random(22)
    gateway = ServeProcess([str(policy)], UPSTREAM, serve_env(home), log=tmp_path / "serve.log")
    current = {"url": gateway.url}
    kills = times(4, 40)
    try:
        with Load(lambda: current["url"]) as load:
            for n in range(kills):
                time.sleep(0.3 + rng.random() * 0.7)
                tree = descendants(gateway.proc.pid)
                gateway.proc.send_signal(signal.SIGKILL)
                if n % 2:  # the whole tree at once, as a container is killed
                    for pid in tree:
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
                gateway.stop()
                reap(tree)  # its forkserver and workers follow it out
                check_trail(log, load.snapshot())
                gateway = ServeProcess([str(policy)], UPSTREAM, serve_env(home),
                                       log=tmp_path / "serve.log")
                current["url"] = gateway.url
            time.sleep(0.5)
    finally:
        gateway.stop()
    records = check_trail(log, load.answered)
    assert len(load.answered) > 20 * kills and records >= len(load.answered)
    print(f"serve killed {kills} times: {len(load.answered)} decisions answered, "
          f"{records} records")


def test_sigkill_decision_workers_at_random_instants(tmp_path: Path) -> None:
    policy, home = tmp_path / "policy.yaml", tmp_path / "home"
    policy.write_text(POLICY)
    rng = random.Random(23)
    kills = times(8, 80)
    killed = 0
    with ServeProcess([str(policy)], UPSTREAM, serve_env(home),
                      log=tmp_path / "serve.log") as gateway, \
            Load(lambda: gateway.url) as load:
        for _ in range(kills):
            time.sleep(0.1 + rng.random() * 0.4)
            workers = decision_workers(gateway.proc.pid)
            if workers:
                os.kill(rng.choice(workers), signal.SIGKILL)
                killed += 1
        before = len(load.snapshot())
        time.sleep(1.0)
        assert len(load.snapshot()) > before  # it answers on, with new workers
    check_trail(home / "audit.jsonl", load.answered)
    assert killed == kills
    died = [a for a in load.answered.values() if "decision worker died" in a.reason]
    assert all(a.decision == "deny" for a in died)
    print(f"{killed} workers killed: {len(load.answered)} decisions answered, {len(died)} of "
          "them denies for a worker that died")
