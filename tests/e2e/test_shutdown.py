"""SIGTERM: serve drains in-flight requests; run flushes the spans it has."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.telemetry.spanfile import span_file_path
from tests.e2e.harness import Sandbox
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]


def test_serve_drains_an_in_flight_stream_on_sigterm(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Any
) -> None:
    upstream = scripted({"responses": [{"text": "slow but complete", "delay_ms": 1500}]})
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\n")
    gateway = ServeProcess([str(policy)], upstream=upstream.url, env=sandbox.env())
    body = json.dumps(
        {
            "model": "claude-opus-5-5",
            "max_tokens": 10,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        }
    ).encode()
    received: dict[str, Any] = {}

    def call() -> None:
        request = urllib.request.Request(
            f"{gateway.url}/v1/messages",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "X-Claude-Code-Session-Id": "s"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            received["status"] = response.status
            received["body"] = response.read().decode()

    client = threading.Thread(target=call)
    client.start()
    deadline = time.monotonic() + 10
    while not upstream.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    gateway.proc.send_signal(signal.SIGTERM)  # while the upstream is still thinking
    client.join(timeout=30)
    code = gateway.proc.wait(timeout=30)  # one SIGTERM: stop() would send a second
    gateway.stop()

    assert received["status"] == 200
    assert "slow but complete" in received["body"] and "message_stop" in received["body"]
    assert code == 0


def test_run_flushes_finished_spans_on_sigterm(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted(
        {
            "responses": [
                {
                    "when": "prompt",
                    "text": "first",
                    "usage": {"input_tokens": 777, "output_tokens": 7},
                    "tool_use": [{"name": "Bash", "input": {"command": "echo one"}}],
                },
                {"when": "tool_result", "text": "never seen", "delay_ms": 20_000},
            ]
        }
    )
    env = sandbox.env()
    env.pop("OTEL_TRACES_EXPORTER")  # no exporter: the local span file
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gateway",
            "run",
            "go",
            "--allowed-tools",
            "Bash",
            "--output-format",
            "stream-json",
        ],
        cwd=sandbox.cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until the first turn's tool result is in
        if '"tool_result"' in line:
            break
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)

    spans = [
        json.loads(line) for line in span_file_path(sandbox.gateway_home).read_text().splitlines()
    ]
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert [c["attributes"]["gen_ai.usage.output_tokens"] for c in chats] == [7]
    assert any(s["name"] == "execute_tool Bash" for s in spans)
