"""Wrapper overhead: `agent-gateway run` versus bare `claude -p`, per turn.

Runs the same scripted tool-using session with few and with many turns through each, and
reports the marginal time per turn ((T_long - T_short) / extra turns), which excludes process
start-up (the wrapper pays for importing claude-agent-sdk once per run). Budget: <= 1.10x.

    python tests/benchmarks/bench_wrapper.py [--repeats 5] [--short 2] [--long 12]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gateway.testing import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.e2e.harness import CLAUDE_BIN  # noqa: E402


def scenario(turns: int) -> dict[str, Any]:
    tool = {"name": "Bash", "input": {"command": "echo tick >> ticks.txt"}}
    steps = [{"when": "tool_result", "text": "again", "tool_use": [tool]} for _ in range(turns - 2)]
    return {"responses": [{"when": "prompt", "text": "start", "tool_use": [tool]}, *steps,
                          {"when": "tool_result", "text": "done"}]}


def timed_run(mode: str, turns: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(scenario(turns)) as server:
        home, cwd = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        cwd.mkdir()
        env = {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": server.url,
               "ANTHROPIC_API_KEY": "bench", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "AGENT_GATEWAY_HOME": str(Path(tmp, "gw")), "OTEL_TRACES_EXPORTER": "none"}
        if mode == "bare":
            cmd = [str(CLAUDE_BIN), "-p", "go", "--output-format", "stream-json", "--verbose",
                   "--allowedTools", "Bash"]
        else:
            cmd = [sys.executable, "-m", "gateway", "run", "go", "--output-format", "stream-json",
                   "--allowed-tools", "Bash", "--policy", str(ROOT / "policies/org.yaml")]
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        elapsed = time.perf_counter() - started
        if proc.returncode != 0 or len(server.requests) != turns:
            raise SystemExit(f"{mode} run failed: rc={proc.returncode} {proc.stderr[-300:]}")
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--short", type=int, default=2)
    parser.add_argument("--long", type=int, default=12)
    args = parser.parse_args()
    per_turn: dict[str, float] = {}
    for mode in ("bare", "gateway"):
        short = [timed_run(mode, args.short) for _ in range(args.repeats)]
        long = [timed_run(mode, args.long) for _ in range(args.repeats)]
        t_short, t_long = statistics.median(short), statistics.median(long)
        per_turn[mode] = (t_long - t_short) / (args.long - args.short)
        print(f"{mode:8s} {args.short} turns median {t_short:6.3f} s   "
              f"{args.long} turns median {t_long:6.3f} s   "
              f"per turn {per_turn[mode] * 1000:7.1f} ms")
    ratio = per_turn["gateway"] / per_turn["bare"]
    verdict = "within" if ratio <= 1.10 else "OVER"
    print(f"wrapper / bare per turn: {ratio:.3f}x ({verdict} the 1.10x budget)")


if __name__ == "__main__":
    main()
