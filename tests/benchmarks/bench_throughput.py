"""Benchmark: closed-loop decisions per second of `agent-gateway serve`.

50 keep-alive connections (`--connections`) each send a PreToolUse hook (the ~120-character
compound Bash command of bench_service.py) the moment the previous one is answered, for
`--seconds`; `serve` runs as a user runs it (token auth, the audit log, tracing to the local
span file, decisions in worker processes). The rate is what the gateway sustains, not what was
offered. On a machine with more than one core the load generator runs on a core of its own (the
last) and `serve` with its decision workers on the others, so generating load takes nothing
from the gateway; on one core they share it, and the report says so.

Reported with the machine's load: the 1-minute load average before and after, the CPU of the
gateway (its whole process tree), of the generator and of everything else meanwhile. Checked:
no errors, and one audit record per decision answered.

Run: python tests/benchmarks/bench_throughput.py [--connections 50] [--seconds 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from bench_service import POLICIES, TOKEN, count_lines, open_loop  # noqa: E402

from gateway.scripted import ScriptedServer  # noqa: E402
from tests.server.processes import ServeProcess  # noqa: E402


def process_tree(pid: int) -> list[int]:
    """`pid` and every process below it."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue  # it exited meanwhile
    return found


def pin(pid: int, cpus: set[int]) -> None:
    """Keep `pid`'s whole tree on `cpus` (a decision worker started later inherits it)."""
    for p in process_tree(pid):
        try:
            os.sched_setaffinity(p, cpus)
        except OSError:
            continue  # it exited meanwhile


def one_round(url: str, pid: int, audit: Path, connections: int, seconds: float,
              generator_cpus: set[int] | None) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    before = count_lines(audit)
    result = open_loop(url, pid, seconds, connections, 0.0, 1, closed=True,
                       generator_cpus=generator_cpus)
    del result["send_late_p50_ms"], result["send_late_p99_ms"], result["send_late_max_ms"]
    del result["sends_late_over_1ms"], result["extra_connections"]
    result["audit_records"] = count_lines(audit) - before - connections  # minus warm-up
    result["load_average_1m_before_after"] = [round(load_before, 2),
                                              round(os.getloadavg()[0], 2)]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    generator_cpus = {cores[-1]} if len(cores) > 1 else None
    gateway_cpus = set(cores[:-1]) if len(cores) > 1 else set(cores)
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp, "home")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
               "AGENT_GATEWAY_HOME": str(home), "AGENT_GATEWAY_TOKEN": TOKEN}
        upstream = ScriptedServer({"responses": [{"text": "hi"}]}).start()
        try:
            with ServeProcess(POLICIES, upstream.url, env) as gw:
                pin(gw.proc.pid, gateway_cpus)
                for _ in range(args.rounds):
                    rounds.append(one_round(gw.url, gw.proc.pid, home / "audit.jsonl",
                                            args.connections, args.seconds, generator_cpus))
        finally:
            upstream.stop()
    report = {
        "cores": len(cores),
        "gateway_cores": sorted(gateway_cpus),
        "generator_cores": sorted(generator_cpus) if generator_cpus else "shared",
        "connections": args.connections,
        "decisions_per_s": [r["decisions_per_s"] for r in rounds],
        "rounds": rounds,
    }
    print(json.dumps(report, indent=2))
    ok = all(r["errors"] == 0 and r["audit_records"] == r["decisions"] for r in rounds)
    print("every decision answered and recorded" if ok else "ERRORS OR UNRECORDED DECISIONS",
          file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
