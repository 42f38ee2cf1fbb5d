"""Wrapper overhead: `agent-gateway run` versus bare `claude -p`, start-up and per turn, in wall
time and in CPU time (user + system of the whole process tree: the gateway and Claude Code
with every tool process they waited for; the scripted API runs in this process and is not
counted).

Each repeat runs a short and a long scripted tool-using session (2 and 32 turns by default)
through each mode, in a shuffled order, so that load drifting over the run hits every mode
alike. Per repeat and mode:
  per turn  = (T_long - T_short) / (long - short)
  start-up  = T_short - short * per turn
and the figures are reported as median [min .. max] over the repeats. Budgets: the
gateway's start-up within +0.5 s of bare (wall), and its CPU per turn within 1.10x of bare.

Modes:
  bare       `claude -p go --output-format stream-json --verbose --allowedTools Bash`
  flags      the same binary with the command line `agent-gateway run` gives it for the
             policy's limits (model, effort, max turns and budget, partial messages, empty
             system prompt), without the gateway's hooks: what those flags alone cost
  gateway    `agent-gateway run --policy policies/org.yaml`

    python tests/benchmarks/bench_wrapper.py [--repeats 10] [--short 2] [--long 32]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gateway.runner.claude_cli import claude_binary, command  # noqa: E402
from gateway.runner.options import RunOptions  # noqa: E402
from gateway.scripted import ScriptedServer  # noqa: E402

POLICY = ROOT / "policies/org.yaml"
MODES = ("bare", "flags", "gateway")
START_UP_BUDGET_S = 0.5
PER_TURN_BUDGET = 1.10


def flags_command() -> list[str]:
    """What `agent-gateway run --policy org.yaml` runs, less the hook settings."""
    from gateway.handlers.engine import Engine
    from gateway.runner.wiring import apply_limits

    options = RunOptions(allowed_tools=["Bash"])
    policy = Engine([str(POLICY)]).policy
    if policy is not None:
        options = apply_limits(options, policy.limits, sys.stderr)
    return command(options, None)  # the prompt goes to its stdin, as the gateway sends it


PROMPT_LINE = json.dumps({"type": "user", "session_id": "", "parent_tool_use_id": None,
                          "message": {"role": "user", "content": "go"}}) + "\n"


def scenario(turns: int) -> dict[str, Any]:
    tool = {"name": "Bash", "input": {"command": "echo tick >> ticks.txt"}}
    steps = [{"when": "tool_result", "text": "again", "tool_use": [tool]} for _ in range(turns - 2)]
    return {"responses": [{"when": "prompt", "text": "start", "tool_use": [tool]}, *steps,
                          {"when": "tool_result", "text": "done"}]}


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(cmd: Sequence[str], turns: int, stdin: str | None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `cmd` against a `turns`-turn script."""
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(scenario(turns)) as server:
        home, cwd = Path(tmp, "home"), Path(tmp, "work")
        home.mkdir()
        cwd.mkdir()
        env = {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": server.url,
               "ANTHROPIC_API_KEY": "bench", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "AGENT_GATEWAY_HOME": str(Path(tmp, "gw")), "OTEL_TRACES_EXPORTER": "none"}
        cpu_before = cpu_of_children()
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                              input=stdin)
        wall = time.perf_counter() - started
        cpu = cpu_of_children() - cpu_before
        if proc.returncode != 0 or len(server.requests) != turns:
            raise SystemExit(f"{cmd[:3]} failed: rc={proc.returncode} "
                             f"requests={len(server.requests)}/{turns} {proc.stderr[-300:]}")
        return wall, cpu


def spread(values: Sequence[float], scale: float = 1.0, fmt: str = "{:.3f}") -> str:
    ordered = sorted(v * scale for v in values)
    return (f"{fmt.format(statistics.median(ordered))} "
            f"[{fmt.format(ordered[0])} .. {fmt.format(ordered[-1])}]")


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs ({model}), "
            f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--short", type=int, default=2)
    parser.add_argument("--long", type=int, default=32)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    commands = {
        "bare": [claude_binary(), "-p", "go", "--output-format", "stream-json", "--verbose",
                 "--allowedTools", "Bash"],
        "flags": flags_command(),
        "gateway": [sys.executable, "-m", "gateway", "run", "go", "--output-format",
                    "stream-json", "--allowed-tools", "Bash", "--policy", str(POLICY)],
    }
    # An installed gateway has its bytecode compiled at install time; a checkout run with
    # PYTHONDONTWRITEBYTECODE would compile every module at every start instead.
    compileall.compile_dir(ROOT / "gateway", quiet=1)
    print(f"machine: {machine()}")
    runs: dict[tuple[str, int], list[tuple[float, float]]] = {
        (m, n): [] for m in modes for n in (args.short, args.long)
    }
    for _ in range(args.repeats):
        order = list(runs)
        random.shuffle(order)
        for mode, turns in order:
            stdin = PROMPT_LINE if mode == "flags" else None
            runs[mode, turns].append(timed_run(commands[mode], turns, stdin))
    extra = args.long - args.short
    figures: dict[str, dict[str, list[float]]] = {}
    for mode in modes:
        shorts, longs = runs[mode, args.short], runs[mode, args.long]
        f: dict[str, list[float]] = {k: [] for k in ("wall_turn", "cpu_turn", "wall_start",
                                                     "cpu_start", "wall_short", "cpu_short")}
        for (ws, cs), (wl, cl) in zip(shorts, longs, strict=True):
            f["wall_turn"].append((wl - ws) / extra)
            f["cpu_turn"].append((cl - cs) / extra)
            f["wall_start"].append(ws - args.short * (wl - ws) / extra)
            f["cpu_start"].append(cs - args.short * (cl - cs) / extra)
            f["wall_short"].append(ws)
            f["cpu_short"].append(cs)
        figures[mode] = f
        print(f"{mode:8s} {args.short}-turn run: wall {spread(f['wall_short'])} s, "
              f"CPU {spread(f['cpu_short'])} s")
        print(f"{'':8s} start-up: wall {spread(f['wall_start'])} s, "
              f"CPU {spread(f['cpu_start'])} s")
        print(f"{'':8s} per turn: wall {spread(f['wall_turn'], 1000, '{:.1f}')} ms, "
              f"CPU {spread(f['cpu_turn'], 1000, '{:.1f}')} ms")
    print(f"({args.repeats} repeats, {args.short}- and {args.long}-turn sessions, interleaved; "
          "median [min .. max])")
    if "gateway" not in figures:
        return
    gw = figures["gateway"]
    for base in (m for m in ("bare", "flags") if m in figures):
        b = figures[base]
        start_delta = [g - x for g, x in zip(gw["wall_start"], b["wall_start"], strict=True)]
        cpu_start_delta = [g - x for g, x in zip(gw["cpu_start"], b["cpu_start"], strict=True)]
        ratio = [g / x for g, x in zip(gw["cpu_turn"], b["cpu_turn"], strict=True)]
        wall_ratio = [g / x for g, x in zip(gw["wall_turn"], b["wall_turn"], strict=True)]
        short_delta = [g - x for g, x in zip(gw["wall_short"], b["wall_short"], strict=True)]
        start_ok = statistics.median(start_delta) <= START_UP_BUDGET_S
        turn_ok = statistics.median(ratio) <= PER_TURN_BUDGET
        print(f"gateway vs {base}: start-up wall {spread(start_delta, fmt='{:+.3f}')} s "
              f"({'within' if start_ok else 'OVER'} +{START_UP_BUDGET_S} s), "
              f"CPU {spread(cpu_start_delta, fmt='{:+.3f}')} s; "
              f"{args.short}-turn run wall {spread(short_delta, fmt='{:+.3f}')} s")
        print(f"gateway / {base} per turn: CPU {spread(ratio, fmt='{:.3f}x')} "
              f"({'within' if turn_ok else 'OVER'} {PER_TURN_BUDGET}x), "
              f"wall {spread(wall_ratio, fmt='{:.3f}x')}")


if __name__ == "__main__":
    main()
