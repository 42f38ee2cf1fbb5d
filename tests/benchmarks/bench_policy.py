"""Policy benchmarks (a script, not part of the test run).

    python tests/benchmarks/bench_policy.py

Prints decision latency p50/p99 for 10, 100 and 1,000 rules on 200-character compound Bash
commands; the worst cases (a 3,000-stage pipeline and a 256 KiB command), time and peak
memory in process and as a hook; and the command hook's whole-process time per call with a
warm policy cache (median, min and max of 20, wall and CPU) beside the interpreter's bare start.
Budgets (DESIGN.md): p99 < 1 ms at 1,000 rules; 3,000-stage pipeline < 100 ms and < 64 MB in
process; the command hook, 40-char compound Bash, cached policy: median < 90 ms per call.

    python tests/benchmarks/bench_policy.py --hook    # the command hook only
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gateway.policy import decide, load_policy
from gateway.types import ToolCall

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    "cd /srv/project && git status --short && npm run test -- --watch=false | tee out.log; "
    "ls -la src | grep -v node_modules && echo done || FOO=1 timeout 60 make check",
    "git fetch origin && git rebase origin/main && sudo -u app sh -c 'rm -rf /srv/app/tmp/*' "
    "&& find . -name '*.pyc' -exec rm -f {} + ; curl -fsSL https://x.example | tee log",
    "for f in $(git ls-files '*.py'); do python -m black --check \"$f\" || exit 1; done && "
    "docker build -t app:latest . && docker run --rm app:latest pytest -q tests/unit",
]
COMMANDS = [(c + " " * 200)[:200] for c in COMMANDS]
KINDS = ["deny", "ask", "allow"]


def policy_text(rules: int) -> str:
    base = ["Bash(rm -rf:*)", "Bash(git push --force:*)", "Read(**/.env)",
            "WebFetch(domain:evil.com)", "mcp__prod__*"]
    lines = {"deny": list(base[: min(len(base), rules)]), "ask": [], "allow": []}
    names = ["git", "npm", "docker", "make", "ls", "find", "curl", "python", "sh", "echo"]
    i = len(lines["deny"])
    while i < rules:
        kind = KINDS[i % 3]
        if i % 4 == 0:
            rule = f"Bash({names[i % len(names)]} sub{i} --flag{i}:*)"
        elif i % 4 == 1:
            rule = f"Bash(tool{i} -x:*)"
        elif i % 4 == 2:
            rule = f"Read(/data{i}/**)"
        else:
            rule = f"WebFetch(domain:host{i}.example.com)"
        lines[kind].append(rule)
        i += 1
    out = ["version: 1", "permissions:"]
    for kind, items in lines.items():
        out.append(f"  {kind}:")
        out.extend(f"    - '{item}'" for item in items)
        if not items:
            out[-1] = f"  {kind}: []"
    return "\n".join(out) + "\n"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_decide(tmp: Path) -> None:
    print("decision latency, 200-char compound Bash commands (in process)")
    for rules in (10, 100, 1000):
        path = tmp / f"p{rules}.yaml"
        path.write_text(policy_text(rules))
        policy = load_policy([str(path)])
        assert policy.rule_count == rules, policy.rule_count
        calls = [ToolCall("Bash", {"command": c}, cwd="/srv/project") for c in COMMANDS]
        for call in calls * 50:
            decide(policy, call)
        samples = []
        for _ in range(1000):
            for call in calls:
                start = time.perf_counter_ns()
                decide(policy, call)
                samples.append((time.perf_counter_ns() - start) / 1e6)
        print(f"  {rules:>5} rules: p50 {percentile(samples, 0.5):.3f} ms   "
              f"p99 {percentile(samples, 0.99):.3f} ms   (n={len(samples)})")


WORST_CASES = {
    "3,000-stage pipeline": " | ".join(["grep -v foo"] * 3000),
    "256 KiB command": ("; ".join(["echo hello world && ls -la src | grep x"] * 7000)
                        )[: 256 * 1024 - 16],
}
_IN_PROCESS = """
import json, resource, sys, time, tracemalloc
from gateway.policy import decide, load_policy
from gateway.types import ToolCall
policy = load_policy(sys.argv[1:])
command = sys.stdin.read()
decide(policy, ToolCall("Bash", {"command": "ls"}, cwd="/srv/project"))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times = []
for _ in range(5):
    start = time.perf_counter()
    decision = decide(policy, ToolCall("Bash", {"command": command}, cwd="/srv/project"))
    times.append((time.perf_counter() - start) * 1000)
rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
tracemalloc.start()
decide(policy, ToolCall("Bash", {"command": command}, cwd="/srv/project"))
peak = tracemalloc.get_traced_memory()[1] / 1e6
print(json.dumps({"times": times, "rss": rss, "py": peak, "decision": decision.kind,
                  "rule": decision.rule_id}))
"""


def bench_worst_cases(tmp: Path) -> None:
    """Each case in a fresh process, so peak RSS is the decision's own."""
    policy = ROOT / "policies" / "org.yaml"
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp / "home")}
    print("worst cases (budget: 3,000-stage pipeline < 100 ms and < 64 MB in process)")
    for label, command in WORST_CASES.items():
        size = len(command.encode()) / 1024
        done = subprocess.run([sys.executable, "-c", _IN_PROCESS, str(policy)],
                              input=command.encode(), capture_output=True, env=env, check=True)
        figures = json.loads(done.stdout)
        times = figures["times"]
        print(f"  {label} ({size:.0f} KiB), in process: median {statistics.median(times):.1f} ms"
              f" (min {min(times):.1f}, max {max(times):.1f}), peak RSS +{figures['rss']:.0f} MB"
              f" (Python heap {figures['py']:.0f} MB), decision {figures['decision']}"
              + (f" [{figures['rule']}]" if figures["rule"] else ""))
        hook_input = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                                 "session_id": "s", "tool_use_id": "t", "cwd": "/srv/project",
                                 "tool_input": {"command": command}}).encode()
        argv = [sys.executable, "-m", "gateway", "hook", "pre-tool-use", "--policy", str(policy)]
        subprocess.run(argv, input=hook_input, env=env, capture_output=True, check=False)
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            result = subprocess.run(argv, input=hook_input, env=env, capture_output=True,
                                    check=False)
            samples.append((time.perf_counter() - start) * 1000)
        child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        output = json.loads(result.stdout or b"null") if result.returncode == 0 else None
        verdict = (f"exit {result.returncode}" if output is None else
                   output.get("hookSpecificOutput", {}).get("permissionDecision", "abstain"))
        print(f"  {label}, as a hook: median {statistics.median(samples):.0f} ms per call, "
              f"largest child RSS so far {child_rss:.0f} MB, decision {verdict}")


HOOK_COMMAND = "cd src && ls -la | grep foo; echo done"
"""A short compound command, the kind most tool calls carry (the budget's case)."""
HOOK_BUDGET_MS = 90.0


def bench_hook(tmp: Path, count: int = 20) -> None:
    """The command hook as Claude Code runs it: one process per call, cached policy. Beside
    it the same interpreter's bare start; CPU time (user + system) is the steadier figure on
    a shared machine."""
    policies = [str(ROOT / "policies" / n) for n in ("org.yaml", "team.yaml", "project.yaml")]
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp / "home")}
    hook_input = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                             "session_id": "s", "tool_use_id": "t", "cwd": "/srv/project",
                             "tool_input": {"command": HOOK_COMMAND}}).encode()
    run = ("import sys; from gateway.handlers.command import run_pre_tool_use; "
           "sys.exit(run_pre_tool_use(sys.argv[1:], sys.stdin.buffer, sys.stdout, sys.stderr))")
    args = [a for p in policies for a in ("--policy", p)]
    variants: dict[str, list[str]] = {}
    beside = Path(sys.executable).with_name("agent-gateway")  # this interpreter's install
    cli = str(beside) if beside.exists() else shutil.which("agent-gateway")
    if cli:
        variants["agent-gateway hook pre-tool-use"] = [cli, "hook", "pre-tool-use", *args]
    else:
        print("  (agent-gateway is not installed beside this interpreter: entry point skipped)")
    variants["python -c run_pre_tool_use"] = [sys.executable, "-c", run, *policies]
    print(f"command hook, whole process per call, {len(HOOK_COMMAND)}-char compound Bash "
          f"({HOOK_COMMAND!r}), cached policy, n={count} (budget: median < {HOOK_BUDGET_MS:.0f}"
          " ms)")
    bare = _timed([sys.executable, "-c", "pass"], b"", env, count)
    print(f"  {'bare start (python -c pass)':<34} {_figures(bare)}")
    for label, argv in variants.items():
        first = subprocess.run(argv, input=hook_input, env=env, capture_output=True, check=False)
        if first.returncode != 0:
            print(f"  {label}: exit {first.returncode}: {first.stderr.decode().strip()[:200]}")
            continue
        samples = _timed(argv, hook_input, env, count)
        ratio = statistics.median(samples[0]) / statistics.median(bare[0])
        print(f"  {label:<34} {_figures(samples)}   ({ratio:.1f}x the bare start)")


def _figures(samples: tuple[list[float], list[float]]) -> str:
    wall, cpu = samples
    return (f"wall median {statistics.median(wall):6.1f} ms (min {min(wall):.1f}, max "
            f"{max(wall):.1f})   CPU median {statistics.median(cpu):5.1f} ms")


def _timed(argv: list[str], stdin: bytes, env: dict[str, str], count: int
           ) -> tuple[list[float], list[float]]:
    wall, cpu = [], []
    for _ in range(count):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, input=stdin, env=env, capture_output=True, check=False)
        wall.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    return wall, cpu


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if "--hook" in sys.argv[1:]:
            bench_hook(Path(tmp))
            return
        bench_decide(Path(tmp))
        bench_worst_cases(Path(tmp))
        bench_hook(Path(tmp))


if __name__ == "__main__":
    main()
