"""The OS sandbox's cost per Bash call: the same scripted session of N `true` Bash calls (one
per turn) run in each mode, interleaved, several times.

Modes:
  bare        `claude -p` with --allowedTools Bash, no sandbox
  enabled     the same with `--settings '{"sandbox": {"enabled": true}}'` alone
  compiled    the same with the sandbox `compile_sandbox` makes of the platform policy
              (`sandbox: required`; its Read/Edit rules and built-in protections)
  run         `agent-gateway run --policy platform.yaml` without the key (hook only)
  run-sandbox `agent-gateway run --policy platform.yaml` with `sandbox: required`

Two figures per mode, both printed:
  stream      the time from a tool_use line to its tool_result line, as this process reads
              them from the stream (Claude Code prints the tool_use when the model's message
              ends and the tool_result when the tool and its hooks are done): p50 and p99 over
              every call of every repeat
  sessions    whole-session wall times of a session of N calls and one of 2, per repeat:
              per call = (T_N - T_2) / (N - 2), start-up = T_2 - 2 * per call (this also holds
              what the stream's interval does not, and keeps a once-per-session cost such as
              the run's hard-link search out of the per-call figure)

The budget: the gateway's sandbox configuration (compiled) adds at most 20 ms per call at p50
over the minimal one (enabled). `--files 50000` runs the sandboxed modes again in a project of
that many files (Claude Code expands the `**/` deny patterns on every Bash call), to show how
the cost scales.

    python tests/benchmarks/bench_sandbox.py [--calls 40] [--repeats 5] [--files 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
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

from gateway.policy import load_policy  # noqa: E402
from gateway.policy.sandbox import compile_sandbox  # noqa: E402
from gateway.runner.claude_cli import claude_binary  # noqa: E402
from gateway.scripted import ScriptedServer  # noqa: E402
from tests.fixtures.precision import platform_policy  # noqa: E402

MODES = ("bare", "enabled", "compiled", "run", "run-sandbox")
SANDBOXED = ("enabled", "compiled", "run-sandbox")
BUDGET_MS = 20.0


def scenario(calls: int) -> dict[str, Any]:
    def tool(i: int) -> dict[str, Any]:
        return {"name": "Bash", "input": {"command": "true"}, "id": f"toolu_bench{i:04d}"}

    steps = [{"when": "tool_result", "text": "again", "tool_use": [tool(i)]}
             for i in range(1, calls)]
    return {"responses": [{"when": "prompt", "text": "start", "tool_use": [tool(0)]}, *steps,
                          {"when": "tool_result", "text": "done"}]}


def commands(workdir: Path, home: Path) -> dict[str, list[str]]:
    policies = {}
    for name, required in (("hook", False), ("sandbox", True)):
        policies[name] = workdir / f"platform-{name}.yaml"
        policies[name].write_text(platform_policy(sandbox=required))
    compiled = compile_sandbox(load_policy([str(policies["sandbox"])]).layers, str(home))
    claude = [claude_binary(), "-p", "go", "--output-format", "stream-json", "--verbose",
              "--allowedTools", "Bash"]
    run = [sys.executable, "-m", "gateway", "run", "go", "--output-format", "stream-json",
           "--allowed-tools", "Bash", "--policy"]
    return {
        "bare": claude,
        "enabled": [*claude, "--settings", json.dumps({"sandbox": {"enabled": True}})],
        "compiled": [*claude, "--settings", json.dumps(compiled.settings())],
        "run": [*run, str(policies["hook"])],
        "run-sandbox": [*run, str(policies["sandbox"])],
    }


def make_project(path: Path, files: int) -> None:
    """A project: a .env, sources, and `files` files in all (100 to a directory)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / ".env").write_text("TOKEN=bench\n")
    for i in range(max(files - 1, 0)):
        directory = path / f"pkg{i // 5000}" / f"mod{i // 100}"
        if i % 100 == 0:
            directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{i % 100}.py").write_text("x = 1\n")


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def session(cmd: Sequence[str], cwd: Path, home: Path, gateway_home: Path, calls: int
            ) -> tuple[float, float, list[float]]:
    """Whole-session wall and CPU seconds (the process tree: Claude Code, the gateway, every
    tool and sandbox process), and each call's tool_use-to-tool_result seconds."""
    with ScriptedServer(scenario(calls)) as server:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
               "HOME": str(home), "ANTHROPIC_BASE_URL": server.url,
               "ANTHROPIC_API_KEY": "bench", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "AGENT_GATEWAY_HOME": str(gateway_home), "OTEL_TRACES_EXPORTER": "none"}
        used: dict[str, float] = {}
        per_call: list[float] = []
        cpu_before = cpu_of_children()
        started = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.perf_counter()
            if not line.startswith("{"):
                continue
            message = json.loads(line)
            content = message.get("message", {}).get("content")
            for block in content if isinstance(content, list) else ():
                if block.get("type") == "tool_use":
                    used[block["id"]] = now
                elif block.get("type") == "tool_result" and block["tool_use_id"] in used:
                    if block.get("is_error"):
                        raise SystemExit(f"{cmd[:4]}: a call failed: {block.get('content')}")
                    per_call.append(now - used.pop(block["tool_use_id"]))
        stderr = proc.stderr.read() if proc.stderr else ""
        status = proc.wait()
        wall = time.perf_counter() - started
        cpu = cpu_of_children() - cpu_before
        if status != 0 or len(per_call) != calls:
            raise SystemExit(f"{cmd[:4]} failed: rc={proc.returncode} calls={len(per_call)}/"
                             f"{calls} {stderr[-400:]}")
        return wall, cpu, per_call


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def machine() -> str:
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, load average {os.getloadavg()[0]:.2f}")


SHORT = 2
"""Calls in the short session: per call = (T_long - T_short) / (calls - SHORT), start-up =
T_short - SHORT * per call, both per repeat, so a cost paid once per session is not spread
over the calls."""


def measure(modes: Sequence[str], cmds: dict[str, list[str]], cwd: Path, home: Path,
            gateway_home: Path, calls: int, repeats: int) -> dict[str, dict[str, list[float]]]:
    found: dict[str, dict[str, list[float]]] = {
        m: {"calls": [], "per_call": [], "start": [], "cpu_call": []} for m in modes}
    for mode in modes:  # one warm-up each (page cache, bytecode)
        session(cmds[mode], cwd, home, gateway_home, SHORT)
    for _ in range(repeats):
        order = [(m, n) for m in modes for n in (SHORT, calls)]
        random.shuffle(order)
        walls: dict[tuple[str, int], float] = {}
        cpus: dict[tuple[str, int], float] = {}
        for mode, n in order:
            walls[mode, n], cpus[mode, n], per_call = session(cmds[mode], cwd, home,
                                                              gateway_home, n)
            if n == calls:
                found[mode]["calls"].extend(per_call)
        for mode in modes:
            slope = (walls[mode, calls] - walls[mode, SHORT]) / (calls - SHORT)
            found[mode]["per_call"].append(slope)
            found[mode]["start"].append(walls[mode, SHORT] - SHORT * slope)
            found[mode]["cpu_call"].append((cpus[mode, calls] - cpus[mode, SHORT])
                                           / (calls - SHORT))
    return found


def spread(values: Sequence[float], fmt: str) -> str:
    ordered = sorted(v * 1000 for v in values)
    return (f"{fmt.format(statistics.median(ordered))} [{fmt.format(ordered[0])} .. "
            f"{fmt.format(ordered[-1])}]")


def report(title: str, found: dict[str, dict[str, list[float]]]) -> None:
    print(f"-- {title}")
    print("mode         stream interval per call  | from sessions (ms): wall per call, "
          "start-up; CPU per call")
    for mode, f in found.items():
        c = [x * 1000 for x in f["calls"]]
        print(f"{mode:12s} p50 {pct(c, 0.5):6.1f} p99 {pct(c, 0.99):6.1f} ms | "
              f"{spread(f['per_call'], '{:.1f}')}, {spread(f['start'], '{:.0f}')}; "
              f"{spread(f['cpu_call'], '{:.1f}')}")
    pairs = [("enabled", "bare"), ("compiled", "bare"), ("compiled", "enabled"),
             ("run", "bare"), ("run-sandbox", "run"), ("run-sandbox", "compiled")]
    for a, b in pairs:
        if a not in found or b not in found:
            continue
        ca, cb = found[a]["calls"], found[b]["calls"]
        p50 = (pct(ca, 0.5) - pct(cb, 0.5)) * 1000
        p99 = (pct(ca, 0.99) - pct(cb, 0.99)) * 1000
        slope = [x - y for x, y in zip(found[a]["per_call"], found[b]["per_call"], strict=True)]
        cpu = [x - y for x, y in zip(found[a]["cpu_call"], found[b]["cpu_call"], strict=True)]
        start = [x - y for x, y in zip(found[a]["start"], found[b]["start"], strict=True)]
        verdict = ""
        if (a, b) == ("compiled", "enabled"):
            verdict = f"  ({'within' if p50 <= BUDGET_MS else 'OVER'} +{BUDGET_MS:.0f} ms)"
        print(f"{a} - {b}: per call p50 {p50:+6.1f} ms, p99 {p99:+6.1f} ms; from sessions "
              f"{spread(slope, '{:+.1f}')} ms per call, start-up "
              f"{spread(start, '{:+.0f}')} ms, CPU {spread(cpu, '{:+.1f}')} ms per call"
              f"{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset")
    parser.add_argument("--files", type=int, default=0,
                        help="also run the sandboxed modes in a project of this many files")
    args = parser.parse_args()
    if not (shutil.which("bwrap") and shutil.which("socat")):
        raise SystemExit("the sandbox needs bubblewrap (bwrap) and socat")
    modes = [m for m in args.modes.split(",") if m]
    print(f"machine: {machine()}")
    print(f"{args.calls} `true` Bash calls, one per turn; {args.repeats} repeats, interleaved")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home, gateway_home = base / "home", base / "gw"
        home.mkdir()
        cmds = commands(base, home)
        small = base / "small"
        make_project(small, 20)
        report("a project of 20 files",
               measure(modes, cmds, small, home, gateway_home, args.calls, args.repeats))
        if args.files:
            big = base / "big"
            started = time.perf_counter()
            make_project(big, args.files)
            print(f"(made {args.files} files in {time.perf_counter() - started:.1f} s)")
            wide = ["bare", *(m for m in modes if m in SANDBOXED or m == "run")]
            report(f"a project of {args.files} files",
                   measure(wide, cmds, big, home, gateway_home, args.calls, args.repeats))


if __name__ == "__main__":
    main()
