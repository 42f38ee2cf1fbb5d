"""The real `serve` under bad input and slow clients: oversized and deeply nested bodies (memory
stays flat, every answer a JSON error of the right shape), bytes trickled in (cut off), a port
already taken, readiness asked without a token, remote runs pointed outside their roots."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.server.runs import OUTSIDE_ROOTS
from tests.server.processes import ROOT, ServeProcess, ThreadedApp, free_port
from tests.server.test_proxy_bodies import Upstream

MiB = 1024 * 1024
POLICY = "version: 1\nname: org\npermissions:\n  deny:\n    - Bash(rm:*)\n"
DEEP = b'{"messages": ' + b"[" * 10_000 + b"]" * 10_000 + b', "model": "claude-opus-5-5"}'
DEEP_HOOK = (b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": '
             + b"[" * 10_000 + b"]" * 10_000 + b"}")


def base_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "AGENT_GATEWAY_"))}
    return {**env, "AGENT_GATEWAY_HOME": str(tmp_path / "home"), "OTEL_TRACES_EXPORTER": "none",
            **extra}


@pytest.fixture
def policy(tmp_path: Path) -> str:
    path = tmp_path / "org.yaml"
    path.write_text(POLICY)
    return str(path)


@pytest.fixture
def upstream() -> Iterator[str]:
    with ThreadedApp(Upstream().app()) as served:
        yield served.url


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def send(port: int, path: str, body: bytes | Callable[[], Iterator[bytes]],
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """POST `body` (bytes with a Content-Length, or a generator sent chunked)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", **(headers or {})}
    try:
        if isinstance(body, bytes):
            conn.request("POST", path, body=body, headers=headers)
        else:
            conn.putrequest("POST", path)
            for key, value in {**headers, "Transfer-Encoding": "chunked"}.items():
                conn.putheader(key, value)
            conn.endheaders()
            try:
                for block in body():
                    conn.send(b"%x\r\n%s\r\n" % (len(block), block))
                conn.send(b"0\r\n\r\n")
            except OSError:
                pass  # refused before the end: the answer is waiting
        response = conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode(errors="replace")
    finally:
        conn.close()


def blocks(total: int) -> Callable[[], Iterator[bytes]]:
    def gen() -> Iterator[bytes]:
        block = b" " * (64 * 1024)
        for _ in range(total // len(block)):
            yield block
    return gen


def test_oversized_and_deep_bodies_keep_memory_flat(
    tmp_path: Path, policy: str, upstream: str
) -> None:
    """The report: six 65 MiB bodies in a row took RSS from 62 to 450 MB; ten at once peaked
    at 1,054 MB, 772 MB held afterwards. Now none is buffered: refused by Content-Length
    unread, or cut as it streams."""
    cases: list[tuple[str, bytes | Callable[[], Iterator[bytes]], int]] = [
        ("/v1/messages", b"x" * (65 * MiB), 413),
        ("/v1/messages", blocks(65 * MiB), 413),
        ("/hooks/PreToolUse", b"x" * (65 * MiB), 413),
        ("/hooks/PreToolUse", blocks(65 * MiB), 413),
        ("/hooks/PreToolUse", DEEP_HOOK, 400),
    ]
    with ServeProcess([policy], upstream, base_env(tmp_path)) as serve:
        pid = serve.proc.pid
        send(serve.port, "/v1/messages", b"{}")  # warm
        before = rss_mib(pid)
        peak = [before]
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], rss_mib(pid))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        answers: list[tuple[str, int, int, Any]] = []
        try:
            for path, body, status in cases * 3:  # in a row
                answers.append((path, status, *send(serve.port, path, body)))
            threads = [
                threading.Thread(target=lambda c=c: answers.append(
                    (c[0], c[2], *send(serve.port, c[0], c[1]))))
                for c in cases[:4] * 3  # twelve at once
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            status, answer = send(serve.port, "/v1/messages", DEEP)
            time.sleep(1)
        finally:
            done.set()
            watcher.join()
        after = rss_mib(pid)
    assert status == 200 and answer["type"] == "message", (status, answer)
    for path, expected, got, body in answers:
        assert got == expected, (path, got, body)
        assert isinstance(body, dict), (path, body)  # JSON, never aiohttp's plain text
        if path == "/v1/messages":
            assert body["type"] == "error" and body["error"]["type"] == "request_too_large"
        else:
            assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
    print(f"RSS {before:.0f} MiB before, {peak[0]:.0f} peak, {after:.0f} after")
    assert peak[0] - before < 150, f"peak {peak[0]:.0f} MiB from {before:.0f}"
    assert after - before < 100, f"held {after:.0f} MiB from {before:.0f}"


def test_slow_clients_are_cut_off(tmp_path: Path, policy: str) -> None:
    """Headers or a body sent a byte at a time held a connection forever."""
    args = ["--idle-timeout", "2"]
    with ServeProcess([policy], "http://127.0.0.1:9", base_env(tmp_path), args=args) as serve:
        results: dict[str, tuple[float, bytes]] = {}

        def trickle(name: str, head: bytes, drip: bytes) -> None:
            sock = socket.create_connection(("127.0.0.1", serve.port))
            sock.sendall(head)
            started = time.monotonic()
            answer = b""
            try:
                for byte in drip:
                    sock.sendall(bytes([byte]))
                    sock.settimeout(0.5)
                    try:
                        answer = sock.recv(65536)
                        break  # an answer, or b"" when closed
                    except TimeoutError:
                        pass
            except OSError:
                pass  # closed while sending
            finally:
                results[name] = (time.monotonic() - started, answer)
                sock.close()

        threads = [
            threading.Thread(target=trickle, args=(
                "headers", b"POST /hooks/PreToolUse HTTP/1.1\r\n", b"X-Slow: " + b"a" * 60)),
            threading.Thread(target=trickle, args=(
                "body", b"POST /hooks/PreToolUse HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                        b"Content-Type: application/json\r\n\r\n", b"{" + b" " * 98)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=5)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
    took, answer = results["headers"]
    assert answer == b"" and took < 6, f"headers: {took:.1f} s, {answer[:80]!r}"
    took, answer = results["body"]
    assert b" 408 " in answer.split(b"\r\n")[0], answer[:200]
    assert b'"permissionDecision": "deny"' in answer and b"did not arrive within 10 s" in answer
    assert took < 14, f"body: {took:.1f} s"


def test_listening_is_said_once_bound_and_a_taken_port_is_one_line(
    tmp_path: Path, policy: str
) -> None:
    port = free_port()
    env = {**base_env(tmp_path), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "gateway", "serve", "--policy", policy, "--port", str(port),
           "--upstream", "http://127.0.0.1:9", "--drain-seconds", "1"]
    first = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stderr is not None
        line = first.stderr.readline()
        assert "listening on" in line, line
        # said only once the socket is bound: the first attempt connects
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
        second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert second.stderr == (
            f"agent-gateway serve: error: cannot listen on 127.0.0.1:{port}: "
            "address already in use\n"
        )
    finally:
        first.terminate()
        first.wait(timeout=30)


def test_readyz_tells_why_only_to_a_token(tmp_path: Path, policy: str) -> None:
    broken = tmp_path / "team-b.yaml"
    broken.write_text("version: 1\npermissions:\n  deny:\n    - Bash(rm:*\n")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        "tokens:\n"
        "  - {token: tok-a, name: team-a}\n"
        f"  - {{token: tok-b, name: team-b, policies: [{broken}]}}\n"
    )
    env = base_env(tmp_path, AGENT_GATEWAY_TOKENS_FILE=str(tokens),
                   AGENT_GATEWAY_METRICS_TOKEN="tok-ops")
    with ServeProcess([policy], "http://127.0.0.1:9", env) as serve:
        hook = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s-b",
                           "tool_name": "Bash", "tool_input": {"command": "ls"},
                           "tool_use_id": "t1"}).encode()
        status, answer = send(serve.port, "/hooks/PreToolUse", hook,
                              {"Authorization": "Bearer tok-b"})
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"

        def readyz(token: str = "") -> tuple[int, Any]:
            conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=10)
            conn.request("GET", "/readyz",
                         headers={"Authorization": f"Bearer {token}"} if token else {})
            response = conn.getresponse()
            return response.status, json.loads(response.read())

        assert readyz() == (200, {"ready": True})  # a probe: no paths, no errors
        assert readyz("nope") == (200, {"ready": True})
        status, team_a = readyz("tok-a")
        assert status == 200 and team_a == {"ready": True, "problems": [], "warnings": []}
        status, team_b = readyz("tok-b")
        (warning,) = team_b["warnings"]
        assert str(broken) in warning and "does not load" in warning
        status, operator = readyz("tok-ops")
        assert operator["warnings"] == team_b["warnings"]


def test_runs_outside_the_roots_get_one_answer(tmp_path: Path, policy: str) -> None:
    root = tmp_path / "runs"
    (root / "work").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file.txt").write_text("x")
    (root / "to-outside").symlink_to(outside)
    (root / "to-nowhere").symlink_to(tmp_path / "nowhere")
    args = ["--runs-root", str(root)]
    with ServeProcess([policy], "http://127.0.0.1:9", base_env(tmp_path), args=args) as serve:
        answers = {
            cwd: send(serve.port, "/v1/runs", json.dumps({"prompt": "hi", "cwd": cwd}).encode())
            for cwd in (str(outside), str(outside / "file.txt"), str(tmp_path / "nowhere"),
                        "/etc", "/nonexistent", str(root / "to-outside"),
                        str(root / "to-nowhere"), str(root / ".." / "outside"))
        }
    for cwd, (status, body) in answers.items():
        assert (status, body) == (403, {"error": OUTSIDE_ROOTS}), cwd
