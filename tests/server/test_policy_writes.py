"""A policy is loaded whole or not at all: the real `serve`, asked for decisions without pause,
while its org policy file is rewritten the way editors and copies write files.

Every decision's audit record names the policy bundle it was made on (sha256 of the bytes),
and the writers record every state the file passed through, so the test knows exactly which
policy each decision used: never one cut short, and never one that gives up a rule of the
policy it replaced; the complete new policy is in force once it has stayed put.
"""

from __future__ import annotations

import hashlib
import http.client
import itertools
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gateway.policy.loosening import loosenings
from gateway.policy.model import PolicyFile
from gateway.policy.reload import HOLD_S
from tests.server import editors
from tests.server.processes import ServeProcess

FILLERS = 20
PROBES = [
    ("Read", {"file_path": "/srv/project/.env"}),
    ("Bash", {"command": "git push --force origin main"}),
]
"""Denied by every complete version of the file; a copy cut short loses them (they follow
the filler rules, as in the report, where the first 400 bytes were all that was left)."""


def policy(markers: range | list[int], fillers: range = range(FILLERS)) -> bytes:
    lines = ["version: 1", "name: org", "permissions:", "  deny:"]
    lines += [f"    - Bash(tool{n}:*)" for n in fillers]
    lines += ["    - Read(**/.env)", "    - Bash(git push --force:*)"]
    lines += [f"    - Bash(marker{m}:*)" for m in markers]
    return ("\n".join(lines) + "\n").encode()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def gives_nothing_up(before: bytes, state: bytes) -> bool:
    try:
        parsed = PolicyFile.model_validate(yaml.safe_load(state))
    except (ValueError, yaml.YAMLError):
        return False  # never a policy at all
    return not loosenings(PolicyFile.model_validate(yaml.safe_load(before)), parsed)


@dataclass
class Answer:
    tool_use_id: str
    probe: str
    decision: str | None
    at: float


@dataclass
class Poller:
    """Decisions back to back on one keep-alive connection, until stopped."""

    port: int
    answers: list[Answer] = field(default_factory=list)
    extra: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        while not self._stop.is_set():
            for tool, tool_input in [*PROBES, *self.extra]:
                self.answers.append(self.ask(conn, tool, tool_input))

    def ask(self, conn: http.client.HTTPConnection, tool: str, tool_input: dict[str, Any]
            ) -> Answer:
        tool_use_id = f"toolu_{next(self._ids)}"
        body = {"hook_event_name": "PreToolUse", "session_id": "s-writes", "tool_name": tool,
                "tool_input": tool_input, "tool_use_id": tool_use_id, "cwd": "/srv/project"}
        conn.request("POST", "/hooks/PreToolUse", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        decision = (answer.get("hookSpecificOutput") or {}).get("permissionDecision")
        return Answer(tool_use_id, json.dumps([tool, tool_input]), decision, time.monotonic())

    def stop(self) -> None:
        self._stop.set()


def wait_for(port: int, tool_input: dict[str, Any], decision: str | None, timeout: float
             ) -> float:
    """Seconds until `Bash tool_input` is answered `decision`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    started = time.monotonic()
    probe = Poller(port)
    while time.monotonic() - started < timeout:
        if probe.ask(conn, "Bash", tool_input).decision == decision:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"{tool_input} not answered {decision} within {timeout} s")


def readyz(port: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/readyz")
    body: dict[str, Any] = json.loads(conn.getresponse().read())
    return body


@dataclass(frozen=True)
class Step:
    name: str
    writer: Callable[..., None]
    target: bytes
    strict: bool = True
    """Only the policy before and the target may decide; otherwise also a state that gives up
    nothing of the policy before (lines written a few at a time, with pauses)."""


def test_no_decision_is_made_on_a_policy_cut_short_while_it_is_written(tmp_path: Path) -> None:
    org = tmp_path / "org.yaml"
    versions = [policy([])] + [policy(range(k + 1)) for k in range(5)]
    org.write_bytes(versions[0])
    loosened = policy(range(5), fillers=range(10, FILLERS))  # 10 rules fewer, on purpose
    steps = [
        Step("cut to 400 bytes for 3 s", editors.cut_then_finish, versions[1]),
        Step("truncate, then write slowly", editors.truncate_then_write_slowly, versions[2]),
        Step("temporary file renamed over", editors.atomic_rename, versions[3]),
        Step("vim: backup, new file in two writes", editors.vim_backup_then_write, versions[4]),
        Step("a few lines at a time, long pauses", editors.in_line_chunks, versions[5],
             strict=False),
        Step("a complete file with fewer rules, in chunks", editors.in_line_chunks, loosened),
    ]
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "home")}
    env.pop("AGENT_GATEWAY_TOKEN", None)
    env.pop("AGENT_GATEWAY_TOKENS_FILE", None)
    log = tmp_path / "serve.log"
    allowed: dict[str, str] = {sha(versions[0]): "initial"}
    intermediate: dict[str, bytes] = {}
    held: list[str] = []
    given_up: list[str] = []
    with ServeProcess([str(org)], "http://127.0.0.1:9", env, log=log) as serve:
        poller = Poller(serve.port)
        thread = threading.Thread(target=poller.run, daemon=True)
        thread.start()
        try:
            before = versions[0]
            for n, step in enumerate(steps):
                states: editors.States = []
                first = len(poller.answers)
                step.writer(org, step.target, states)
                written = time.monotonic()
                for state in states:
                    if state is not None and state != step.target:
                        intermediate[sha(state)] = state
                        if not step.strict and gives_nothing_up(before, state):
                            allowed.setdefault(sha(state), f"{step.name}: a safe state")
                allowed[sha(step.target)] = step.name
                if step.target is loosened:
                    # held, and shown, until it has read the same for HOLD_S
                    time.sleep(1.5)
                    held = readyz(serve.port)["warnings"]
                    wait_for(serve.port, {"command": "tool0 x"}, None, HOLD_S + 5)
                    # the decision workers and /readyz each reload on their own poll: the
                    # message follows within one
                    deadline = time.monotonic() + 3
                    given_up = readyz(serve.port)["warnings"]
                    while not any("GIVING UP" in w for w in given_up) and (
                            time.monotonic() < deadline):
                        time.sleep(0.1)
                        given_up = readyz(serve.port)["warnings"]
                else:
                    wait_for(serve.port, {"command": f"marker{n} x"}, "deny", 5)
                print(f"{step.name}: {len(states)} states, in force "
                      f"{time.monotonic() - written:.2f} s after the last write")
                assert len(poller.answers) - first > 20, f"{step.name}: too few decisions"
                before = step.target
        finally:
            poller.stop()
            thread.join(timeout=20)
    # every probe was denied throughout
    wrong = [a for a in poller.answers if a.decision != "deny"]
    assert not wrong, f"{len(wrong)} of {len(poller.answers)} probes not denied: {wrong[:3]}"
    # and every decision was made on a policy the writers meant, or one no weaker
    records = [json.loads(line) for line in (tmp_path / "home" / "audit.jsonl").open()]
    used = {r["tool_use_id"]: r["policy"] for r in records if r.get("tool")}
    assert len(used) >= len(poller.answers)
    for answer in poller.answers:
        bundle = used[answer.tool_use_id]
        assert bundle in allowed, (
            f"{answer.probe} decided on a policy cut short: "
            f"{intermediate.get(bundle, b'(unknown)')[-80:]!r}"
        )
    seen = {allowed[used[a.tool_use_id]] for a in poller.answers}
    assert {step.name for step in steps if step.strict} <= seen
    # the complete file with fewer rules was held, shown, then loaded and shown
    assert any("held until" in w and "tool0" in w for w in held), held
    assert any("GIVING UP deny rule 'Bash(tool0:*)'" in w for w in given_up), given_up
