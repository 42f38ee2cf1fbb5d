"""Benchmark: `agent-gateway run` with the trace collector up vs down.

Budget (issue 5): with the collector down (OTLP endpoint at a closed loopback port) a run takes
at most 5% longer than with it up. Each round runs the same multi-turn scripted session (three
tool calls, four model responses) through the real Claude Code once with an in-process OTLP/HTTP
receiver and once against the closed port, alternating which goes first so drift hits both.

Run: python tests/benchmarks/bench_trace_overhead.py [-n 10]
Exit status 1 when the median ratio is over budget.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox, gateway_run
from tests.otlp_receiver import OtlpReceiver

BUDGET = 1.05


def _usage(i: int) -> dict[str, int]:
    return {
        "input_tokens": 1000 + i,
        "output_tokens": 40 + i,
        "cache_read_input_tokens": 300 + i,
        "cache_creation_input_tokens": 50 + i,
    }


SCENARIO = {
    "responses": [
        {
            "when": "prompt",
            "text": "Step one.",
            "tool_use": [{"name": "Bash", "input": {"command": "echo 1 > a.txt"}}],
            "usage": _usage(1),
        },
        {
            "when": "tool_result",
            "text": "Step two.",
            "tool_use": [{"name": "Bash", "input": {"command": "echo 2 >> a.txt"}}],
            "usage": _usage(2),
        },
        {
            "when": "tool_result",
            "text": "Step three.",
            "tool_use": [{"name": "Bash", "input": {"command": "cat a.txt"}}],
            "usage": _usage(3),
        },
        {"when": "tool_result", "text": "Done.", "usage": _usage(4)},
    ]
}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def sandbox(root: Path, base_url: str) -> Sandbox:
    home, cwd, gw = root / "home", root / "work", root / "gateway-home"
    for d in (home, cwd, gw):
        d.mkdir(parents=True)
    return Sandbox(home=home, cwd=cwd, gateway_home=gw, base_url=base_url)


def one_run(box: Sandbox, endpoint: str) -> float:
    env = box.env(
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
    )
    started = time.perf_counter()
    out = gateway_run(box, "three steps", "--allowed-tools", "Bash", env=env)
    elapsed = time.perf_counter() - started
    if out.returncode != 0 or out.result["num_turns"] != 4:
        raise SystemExit(f"run failed (rc={out.returncode}): {out.stderr[-2000:]}")
    return elapsed


def describe(label: str, times: list[float]) -> str:
    return (
        f"{label:<15} n={len(times):<3} mean {statistics.mean(times):6.3f} s   "
        f"median {statistics.median(times):6.3f} s   min {min(times):6.3f} s   "
        f"max {max(times):6.3f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="runs per mode (default 10)")
    args = parser.parse_args()

    up: list[float] = []
    down: list[float] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        ScriptedServer(SCENARIO) as server,
        OtlpReceiver() as receiver,
    ):
        dead = f"http://127.0.0.1:{closed_port()}"
        one_run(sandbox(Path(tmp) / "warmup", server.url), receiver.endpoint)  # page cache
        for i in range(args.n):
            modes = [("up", receiver.endpoint, up), ("down", dead, down)]
            for name, endpoint, times in modes if i % 2 == 0 else modes[::-1]:
                times.append(one_run(sandbox(Path(tmp) / f"{name}-{i}", server.url), endpoint))
        received = {s["trace_id"] for s in receiver.spans if s["name"].startswith("invoke_agent")}

    print(describe("collector up", up))
    print(describe("collector down", down))
    mean_ratio = statistics.mean(down) / statistics.mean(up)
    median_ratio = statistics.median(down) / statistics.median(up)
    print(f"down/up ratio   mean {mean_ratio:.3f}   median {median_ratio:.3f}   budget <= {BUDGET}")
    print(f"traces received with the collector up: {len(received)} (expected {args.n + 1})")
    ok = median_ratio <= BUDGET
    print("within budget" if ok else "OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
