"""What every fault test checks afterwards, and the load that runs while it strikes.

`Load` keeps `clients` threads sending PreToolUse hook requests (each with its own tool_use
id, over keep-alive connections) to whatever `target()` names at the moment, and notes every
decision answered. `check_trail` then holds the gateway to its promise: the audit log
verifies (no false alarm after any kill), and every answered decision is the last record of
its tool_use id (a decision is recorded before it is answered; a later record of the same id
can only be the deny that answered a decision past its budget)."""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import random
import signal
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.audit import verify_log

POLICY = """\
version: 1
permissions:
  deny: ['Bash(rm:*)']
  allow: ['Bash(echo:*)']
"""
COMMANDS = ("echo hi", "rm -rf build", "ls -la", "echo $(cat notes.txt) | wc -c")

FULL = os.environ.get("AGENT_GATEWAY_FAULTS") == "full"
"""`AGENT_GATEWAY_FAULTS=full`: every fault many more times (docs/faults.md)."""


UPSTREAM = "http://127.0.0.1:9"
"""The Messages API `serve` would proxy to: none (these tests send hooks only)."""


def serve_env(home: Path) -> dict[str, str]:
    """The environment of a `serve` on `home`: none of the developer's gateway settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENT_GATEWAY_", "OTEL_"))}
    return {**env, "AGENT_GATEWAY_HOME": str(home), "OTEL_TRACES_EXPORTER": "none"}


def times(reduced: int, full: int) -> int:
    return full if FULL else reduced


def hook_input(tool_use_id: str, command: str, cwd: str = "/tmp") -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "faults",
            "tool_use_id": tool_use_id, "tool_input": {"command": command}, "cwd": cwd}


def decision_of(output: dict[str, Any]) -> str:
    specific = output.get("hookSpecificOutput")
    if isinstance(specific, dict):
        return str(specific.get("permissionDecision"))
    return "abstain"


@dataclass
class Answered:
    decision: str
    reason: str = ""


@dataclass
class Load:
    """Concurrent hook requests against the gateway `target()` names (it may change)."""

    target: Callable[[], str]
    clients: int = 8
    answered: dict[str, Answered] = field(default_factory=dict)
    failed: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _ids: Any = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> Load:
        for n in range(self.clients):
            thread = threading.Thread(target=self._client, args=(n,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def snapshot(self) -> dict[str, Answered]:
        with self._lock:
            return dict(self.answered)

    def _client(self, n: int) -> None:
        rng = random.Random(n)
        connection: http.client.HTTPConnection | None = None
        url = ""
        while not self._stop.is_set():
            if connection is None or url != self.target():
                url = self.target()
                address = urllib.parse.urlsplit(url)
                connection = http.client.HTTPConnection(address.hostname, address.port,
                                                        timeout=30)
            with self._lock:
                tool_use_id = f"toolu_{next(self._ids)}"
            body = json.dumps(hook_input(tool_use_id, rng.choice(COMMANDS)))
            try:
                connection.request("POST", "/hooks/PreToolUse", body,
                                   {"Content-Type": "application/json"})
                response = connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = None
                with self._lock:
                    self.failed += 1
                time.sleep(0.02)  # the gateway is down: try again, as Claude Code would not
                continue
            if response.status != 200:
                continue  # refused (503 while starting): no decision answered
            output = json.loads(data)
            reason = str((output.get("hookSpecificOutput") or {}).get(
                "permissionDecisionReason", ""))
            with self._lock:
                self.answered[tool_use_id] = Answered(decision_of(output), reason)


def check_trail(log: Path, answered: dict[str, Answered],
                unrecorded: Callable[[Answered], bool] = lambda _: False) -> int:
    """The log verifies, and each answered decision is the last record of its tool_use id
    (`unrecorded`: answers allowed to have none, e.g. a deny for want of a record). Returns
    the number of records."""
    report = verify_log(log)
    assert report.finding is None, report.finding
    last: dict[str, str] = {}
    for record in report.records:
        if record.get("tool") == "Bash":
            last[str(record.get("tool_use_id"))] = str(record.get("decision"))
    missing = [tool_use_id for tool_use_id, answer in answered.items()
               if tool_use_id not in last and not unrecorded(answer)]
    assert not missing, f"{len(missing)} answered decisions without a record: {missing[:5]}"
    differ = [(tool_use_id, answer.decision, last[tool_use_id])
              for tool_use_id, answer in answered.items()
              if tool_use_id in last and last[tool_use_id] != answer.decision]
    assert not differ, f"answers that are not their last record: {differ[:5]}"
    return report.count


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (from /proc)."""
    children = _children()
    found, pending = [], [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def decision_workers(serve_pid: int) -> list[int]:
    """`serve`'s decision workers: the children of its multiprocessing forkserver."""
    children = _children()
    servers = [p for p in children.get(serve_pid, []) if "forkserver" in cmdline(p)]
    return [worker for server in servers for worker in children.get(server, [])]


def reap(pids: list[int], timeout: float = 15.0) -> None:
    """Wait for processes the test's kill orphaned to end (a worker sees its pipe close);
    kill those still there after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and not _zombie(p)]
        if not alive:
            return
        time.sleep(0.05)
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
