"""Benchmark: `serve` stays responsive while a remote run's decision is slow, and what the run
hook endpoint's check of its caller costs.

Budget: a remote run's PreToolUse is decided in serve's decision workers, never on its event
loop, so `/healthz` answers as fast during a slow decision as without one (the test asserts
< 100 ms; before, it waited the decision out: 1.0 s during a one-second decision).

What it does: starts a real `agent-gateway serve` with a sitecustomize that makes a Bash
command naming `slow-decision` cost `--decision-cpu` seconds of CPU in whatever process
decides it, then, `--runs` times, a remote run (the real Claude Code against the scripted
Messages API) whose one Bash call is that command, while a thread asks `/healthz` every 10 ms.
It prints /healthz's latency (p50, p99, max) while decisions were in progress and while none
were, and the cost of the endpoint's caller check per connection: one `sock_diag` lookup plus
Claude Code's descriptors, and the /proc/net/tcp fallback.

Run: python tests/benchmarks/bench_remote_runs.py [--runs 5] [--decision-cpu 1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from gateway.runner import peer_process  # noqa: E402
from gateway.scripted import ScriptedServer  # noqa: E402
from tests.e2e.harness import post_ndjson  # noqa: E402
from tests.server.processes import ServeProcess  # noqa: E402

SITE = '''\
import os, time
import gateway.policy.evaluate as evaluate
_decide = evaluate.decide
def decide(policy, call, **kwargs):
    if "slow-decision" in str(call.tool_input.get("command", "")):
        with open(os.environ["SLOW_DECISION_MARK"], "a") as marks:
            marks.write(f"{time.time()} ")
            marks.flush()
            end = time.process_time() + float(os.environ["SLOW_DECISION_CPU"])
            while time.process_time() < end:
                pass
            marks.write(f"{time.time()}\\n")
    return _decide(policy, call, **kwargs)
evaluate.decide = decide
'''


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] if ordered else 0.0


def peer_check_us(count: int = 2000) -> dict[str, float]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        server = listener.getsockname()
        with socket.create_connection(server):
            accepted, peer = listener.accept()
            with accepted:
                started = time.perf_counter()
                for _ in range(count):
                    assert peer_process.holds_connection(os.getpid(), peer, server) == ""
                diag = (time.perf_counter() - started) / count * 1e6
                started = time.perf_counter()
                for _ in range(count // 20):
                    assert peer_process.socket_inode(peer_process._tables(), peer, server)
                table = (time.perf_counter() - started) / (count // 20) * 1e6
    return {"peer_check_us": round(diag, 1), "proc_net_tcp_lookup_us": round(table, 1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--decision-cpu", type=float, default=1.0)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-remote-runs-"))
    home, work, gw_home, site = (tmp / d for d in ("home", "work", "gw", "site"))
    for d in (home, work, gw_home, site):
        d.mkdir()
    (site / "sitecustomize.py").write_text(SITE)
    policy = tmp / "org.yaml"
    policy.write_text("version: 1\nname: org\npermissions:\n  allow:\n    - Bash(echo:*)\n")
    mark = tmp / "deciding"
    scripted = ScriptedServer({"responses": [
        {"when": "prompt", "text": "working", "times": 0,
         "tool_use": [{"name": "Bash", "input": {"command": "echo slow-decision"}}]},
        {"when": "tool_result", "text": "done", "times": 0},
    ]}).start()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "OTEL_", "AGENT_GATEWAY_"))}
    env.update(HOME=str(home), ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=scripted.url,
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", AGENT_GATEWAY_HOME=str(gw_home),
               OTEL_TRACES_EXPORTER="none", PYTHONPATH=str(site),
               SLOW_DECISION_MARK=str(mark), SLOW_DECISION_CPU=str(args.decision_cpu))
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    try:
        with ServeProcess([str(policy)], upstream="http://127.0.0.1:9", env=env,
                          args=["--runs-root", str(work),
                                "--decision-budget", str(args.decision_cpu * 5)]) as gateway:

            def poll() -> None:
                while not stop.is_set():
                    started = time.time()
                    with urllib.request.urlopen(gateway.url + "/healthz", timeout=30):
                        pass
                    samples.append((started, time.time()))
                    time.sleep(0.01)

            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            for _ in range(args.runs):
                status, lines = post_ndjson(gateway.url, "", "/v1/runs", {
                    "prompt": "go", "cwd": str(work), "allowed_tools": ["Bash"]})
                assert status == 200 and lines[-1]["exit_code"] == 0, lines[-1]
            stop.set()
            poller.join(timeout=30)
    finally:
        scripted.stop()
    decisions = [tuple(map(float, line.split())) for line in mark.read_text().splitlines()
                 if len(line.split()) == 2]
    during, idle = [], []
    for start, end in samples:  # a sample overlapping a decision was taken during it
        overlaps = any(start < d_end and d_start < end for d_start, d_end in decisions)
        (during if overlaps else idle).append(end - start)
    ms = 1000.0
    print(json.dumps({
        "runs": args.runs, "decision_cpu_s": args.decision_cpu, "decisions": len(decisions),
        "healthz_during_decisions": {"n": len(during), "p50_ms": round(pct(during, 50) * ms, 2),
                                     "p99_ms": round(pct(during, 99) * ms, 2),
                                     "max_ms": round(max(during, default=0) * ms, 2)},
        "healthz_otherwise": {"n": len(idle), "p50_ms": round(pct(idle, 50) * ms, 2),
                              "p99_ms": round(pct(idle, 99) * ms, 2),
                              "max_ms": round(max(idle, default=0) * ms, 2)},
        **peer_check_us(),
        "loadavg": os.getloadavg(),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
