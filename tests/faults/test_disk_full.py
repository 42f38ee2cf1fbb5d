"""Fill the disk under `serve`'s audit log, under load, and free it again, many times (a real
small tmpfs). While it is full the replica says it is not ready and decisions that cannot be
recorded are denied; after each cycle the log verifies and every decision answered (but the
denies for want of a record) is recorded, and /readyz is ready again."""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.faults.trail import (
    POLICY,
    UPSTREAM,
    Answered,
    Load,
    check_trail,
    serve_env,
    times,
)
from tests.server.processes import ServeProcess
from tests.small_fs import fill, small_tmpfs

pytestmark = pytest.mark.faults


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=10) as response:
            return bool(json.loads(response.read())["ready"])
    except urllib.error.HTTPError as exc:
        assert exc.code == 503
        return False


def unrecorded(answer: Answered) -> bool:
    return answer.decision == "deny" and "audit log" in answer.reason


def test_a_disk_that_fills_and_frees_under_load(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    rng = random.Random(25)
    with small_tmpfs(tmp_path / "home", "8m") as home:
        log = home / "audit.jsonl"
        with ServeProcess([str(policy)], UPSTREAM, serve_env(home),
                          log=tmp_path / "serve.log") as gateway, \
                Load(lambda: gateway.url, clients=4) as load:
            cycles = 0
            for _ in range(times(3, 30)):
                cycles += 1
                time.sleep(0.2 + rng.random() * 0.5)
                filler = fill(home)
                time.sleep(0.2 + rng.random() * 0.3)
                assert not ready(gateway.url)
                filler.unlink()
                assert ready(gateway.url)
                check_trail(log, load.snapshot(), unrecorded)
                if log.stat().st_size > 4 * 1024 * 1024:  # keep room to fill and free
                    break
            time.sleep(0.3)
        answered = load.answered
        check_trail(log, answered, unrecorded)
        assert sum(not unrecorded(a) for a in answered.values()) > 0
        print(f"{cycles} disk-full cycles: {len(answered)} decisions answered, "
              f"{sum(map(unrecorded, answered.values()))} denies for want of a record")
