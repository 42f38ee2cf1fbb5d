"""No stalls: pathological hook inputs sent to one `serve` replica never hold up a steady
stream of small PreToolUse decisions from another client, and each gets a deny in time."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from gateway.server.service import GatewayService
from gateway.tenancy.tokens import Caller
from tests.server.conftest import AppFactory
from tests.server.processes import ServeProcess
from tests.server.test_app import decision_of, pre_tool_use

REPO = Path(__file__).parents[2]
POLICIES = [str(REPO / "policies" / f"{n}.yaml") for n in ("org", "team", "project")]
TOKEN = "no-stalls-token"


def hook_body(command: str, session: str, n: int) -> bytes:
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": session,
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": f"toolu_{n}",
            "cwd": "/srv/project",
        }
    ).encode()


def pipeline(stages: int) -> str:
    return " | ".join(["cat"] * stages)


# The inputs the security review sent: an 18 KB 3,000-stage pipeline (11 s in process), a
# 36 KB one (76 s, 3.8 GB), a 256 KiB command; and bodies that once answered 500.
ATTACKS: list[tuple[str, bytes, dict[str, str]]] = [
    ("3000-stage pipeline", hook_body(pipeline(3000), "s-attack", 0), {}),
    ("6000-stage pipeline", hook_body(pipeline(6000), "s-attack", 1), {}),
    ("256 KiB command", hook_body("echo " + "a" * (256 * 1024 - 64), "s-attack", 2), {}),
    ("1,200-deep JSON", b'{"tool_name":"Bash","tool_input":' + b"[" * 1200 + b"]" * 1200 + b"}",
     {}),
    ("invalid gzip", b"\x1f\x8b not gzip", {"Content-Encoding": "gzip"}),
    ("gzip bomb", gzip.compress(b" " * (64 * 1024 * 1024)), {"Content-Encoding": "gzip"}),
    # large and quick to decide: what every input above becomes once analysis is linear
    ("900 KB Write", json.dumps({"hook_event_name": "PreToolUse", "session_id": "s-attack",
                                 "tool_name": "Write", "tool_use_id": "toolu_w",
                                 "tool_input": {"file_path": "/srv/project/big.txt",
                                                "content": "x" * 900_000}}).encode(), {}),
]
# Analysis is linear: a long pipeline of `cat` is decided in time, and the policy has no
# opinion on it, so it may be answered `{}` like the other large but harmless inputs.
NO_OPINION_OK = {"3000-stage pipeline", "6000-stage pipeline", "256 KiB command",
                 "900 KB Write"}
"""Inputs the policy may leave to Claude Code ({}) when decided within the budget."""


def post(conn: http.client.HTTPConnection, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    conn.request(
        "POST",
        "/hooks/PreToolUse",
        body=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}",
                 **headers},
    )
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def test_pathological_inputs_do_not_stall_small_decisions(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "AGENT_GATEWAY_HOME": str(tmp_path / "home"),
        "AGENT_GATEWAY_TOKEN": TOKEN,
        "OTEL_TRACES_EXPORTER": "none",
    }
    log = tmp_path / "serve.log"
    with ServeProcess(POLICIES, "http://127.0.0.1:9", env, log=log) as gateway:
        stop = threading.Event()
        attacked: list[tuple[str, int, Any, float]] = []

        def attacker(offset: int) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
            n = offset
            while not stop.is_set():
                name, body, headers = ATTACKS[n % len(ATTACKS)]
                started = time.monotonic()
                status, answer = post(conn, body, headers)
                attacked.append((name, status, answer, time.monotonic() - started))
                n += 1

        def measure(seconds: float) -> tuple[list[float], list[str]]:
            conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
            latencies: list[float] = []
            wrong: list[str] = []
            end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < end:
                command = "ls -la src" if n % 2 else "rm -rf build/"
                started = time.perf_counter()
                status, answer = post(conn, hook_body(command, "s-steady", n), {})
                latencies.append(time.perf_counter() - started)
                expected = "deny" if command.startswith("rm") else "allow"
                if status != 200 or decision_of(answer) != expected:
                    wrong.append(f"{command}: {status} {answer}")
                n += 1
                time.sleep(0.02)
            return sorted(latencies), wrong

        measure(1)  # warm up
        attackers = [threading.Thread(target=attacker, args=(i,)) for i in range(3)]
        for thread in attackers:
            thread.start()
        time.sleep(0.5)  # the attack is under way
        latencies, wrong = measure(8)
        stop.set()
        for thread in attackers:
            thread.join(timeout=60)

    p99 = latencies[int(0.99 * len(latencies))] * 1000
    p50 = latencies[len(latencies) // 2] * 1000
    kinds = Counter((name, status) for name, status, _, _ in attacked)
    report = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms over {len(latencies)} decisions; {kinds}"
    assert not wrong, wrong[:5]
    assert len(latencies) >= 200, report
    assert p99 < 50, report
    # every attack was answered within the budget: a deny, a 4xx refusal, or (the inputs a
    # policy may leave to Claude Code, when decided in time) no opinion; never a 5xx
    assert {name for name, _, _, _ in attacked} == {name for name, _, _ in ATTACKS}, report
    for name, status, answer, took in attacked:
        assert status in (200, 400, 413), (name, status, answer)
        if name in NO_OPINION_OK and answer == {}:
            continue
        assert decision_of(answer) == "deny", (name, answer)
        assert took < 2 + 1.5, (name, took)
    print(report)
    assert "Traceback" not in log.read_text()


async def test_a_decision_over_budget_is_a_deny_naming_the_budget(
    make_client: AppFactory, policy_file: Path
) -> None:
    client, _ = await make_client(decision_budget_s=0.02)
    body = pre_tool_use(pipeline(20_000))  # about 120 KB: far more than 20 ms to parse
    resp = await client.post("/hooks/PreToolUse", json=body)
    assert resp.status == 200
    answer = await resp.json()
    assert decision_of(answer) == "deny"
    reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "no decision within the 0.02 s decision budget" in reason
    assert "--decision-budget" in reason
    records = (policy_file.parent / "gw-home" / "audit.jsonl").read_text().splitlines()
    record = json.loads(records[-1])
    assert record["decision"] == "deny" and "decision budget" in record["reason"]
    assert record["tool_use_id"] == "tu-1" and record["tenant"] == "anonymous"


async def test_a_caller_whose_policy_does_not_load_is_denied_by_the_workers(
    tmp_path: Path, policy_file: Path
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\npermissions:\n  deny:\n    - Bash(rm:*\n")
    service = GatewayService([str(policy_file)])
    await service.start()
    try:
        caller = Caller("team-broken", (str(broken),))
        body = pre_tool_use("ls")
        reply = await service.hook("PreToolUse", body, json.dumps(body).encode(), caller)
    finally:
        await service.close()
    assert decision_of(reply.body) == "deny"
    assert f"{broken}:4:" in reply.body["hookSpecificOutput"]["permissionDecisionReason"]
