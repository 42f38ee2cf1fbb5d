"""Wrapper overhead: `agent-gateway run` versus bare `claude -p`, per turn.

Runs the same scripted tool-using session with few and with many turns through each mode, and
reports the marginal time per turn ((T_long - T_short) / extra turns), which excludes process
start-up (the wrapper pays for importing claude-agent-sdk once per run). Budget: <= 1.10x.

Modes, interleaved in a shuffled order within each repeat so that load drifting over the run
hits every mode alike:
  bare       `claude -p ... --output-format stream-json --verbose`
  sdk-flags  the same binary with exactly the command line and environment claude-agent-sdk
             gives it (stream-json input, --include-partial-messages, session-state frames,
             the policy's model/effort/limits), driven by a minimal stdin/stdout loop: what the
             binary alone costs in SDK mode, i.e. the baseline the wrapper cannot go below
  gateway    `agent-gateway run --policy policies/org.yaml`

A second estimate, robust to a loaded machine, is the median time between consecutive
Messages API requests within a long run (one request per turn), as the scripted server sees it.

    python tests/benchmarks/bench_wrapper.py [--repeats 5] [--short 2] [--long 22]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gateway.testing.server as scripted_server
from gateway.testing import ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.e2e.harness import CLAUDE_BIN  # noqa: E402

POLICY = ROOT / "policies/org.yaml"
MODES = ("bare", "sdk-flags", "gateway")
_ARRIVALS: list[float] = []
_Recorded = scripted_server.RecordedRequest


def _stamped(*args: Any, **kwargs: Any) -> Any:
    _ARRIVALS.append(time.perf_counter())
    return _Recorded(*args, **kwargs)


scripted_server.RecordedRequest = _stamped  # type: ignore[misc]  # arrival times, per request


def sdk_command() -> tuple[list[str], dict[str, str]]:
    """The command line and extra environment claude-agent-sdk gives the binary for the
    gateway's options (the policy's limits applied, partial messages on)."""
    from claude_agent_sdk import ClaudeAgentOptions
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport
    from claude_agent_sdk._version import __version__

    from gateway.hooks.engine import Engine
    from gateway.sdk.wiring import apply_limits

    options = ClaudeAgentOptions(allowed_tools=["Bash"], include_partial_messages=True)
    policy = Engine([str(POLICY)]).policy
    if policy is not None:
        options = apply_limits(options, policy.limits, sys.stderr)
    transport = SubprocessCLITransport(prompt="go", options=options)
    transport._cli_path = str(CLAUDE_BIN)
    env = {"CLAUDE_CODE_ENTRYPOINT": "sdk-py", "CLAUDE_AGENT_SDK_VERSION": __version__,
           "CLAUDE_CODE_SDK_READS_SESSION_STATE": "1"}
    return transport._build_command(), env


def drive_sdk_flags() -> int:
    """The minimal SDK-mode host: initialize, one prompt, read to "idle", close stdin."""
    cmd, extra = sdk_command()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={**os.environ, **extra})
    assert proc.stdin is not None and proc.stdout is not None
    init = {"type": "control_request", "request_id": "init",
            "request": {"subtype": "initialize", "hooks": None}}
    prompt = {"type": "user", "session_id": "", "parent_tool_use_id": None,
              "message": {"role": "user", "content": "go"}}
    proc.stdin.write((json.dumps(init) + "\n" + json.dumps(prompt) + "\n").encode())
    proc.stdin.flush()
    for line in proc.stdout:
        if b'"session_state_changed"' in line and b'"idle"' in line:
            proc.stdin.close()
    return proc.wait()


def scenario(turns: int) -> dict[str, Any]:
    tool = {"name": "Bash", "input": {"command": "echo tick >> ticks.txt"}}
    steps = [{"when": "tool_result", "text": "again", "tool_use": [tool]} for _ in range(turns - 2)]
    return {"responses": [{"when": "prompt", "text": "start", "tool_use": [tool]}, *steps,
                          {"when": "tool_result", "text": "done"}]}


def timed_run(mode: str, turns: int) -> tuple[float, float]:
    """Wall time of one run, and the median time between its consecutive API requests."""
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
        elif mode == "sdk-flags":
            cmd = [sys.executable, __file__, "--drive-sdk-flags"]
        else:
            cmd = [sys.executable, "-m", "gateway", "run", "go", "--output-format", "stream-json",
                   "--allowed-tools", "Bash", "--policy", str(POLICY)]
        _ARRIVALS.clear()
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        elapsed = time.perf_counter() - started
        if proc.returncode != 0 or len(server.requests) != turns:
            raise SystemExit(f"{mode} run failed: rc={proc.returncode} {proc.stderr[-300:]}")
        gaps = [b - a for a, b in itertools.pairwise(_ARRIVALS)]
        return elapsed, statistics.median(gaps) if gaps else 0.0


def main() -> None:
    if sys.argv[1:] == ["--drive-sdk-flags"]:
        raise SystemExit(drive_sdk_flags())
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--short", type=int, default=2)
    parser.add_argument("--long", type=int, default=22)
    args = parser.parse_args()
    walls: dict[tuple[str, int], list[float]] = {(m, n): [] for m in MODES
                                                 for n in (args.short, args.long)}
    gaps: dict[str, list[float]] = {m: [] for m in MODES}
    for _ in range(args.repeats):
        order = list(walls)
        random.shuffle(order)
        for mode, turns in order:
            elapsed, gap = timed_run(mode, turns)
            walls[mode, turns].append(elapsed)
            if turns == args.long:
                gaps[mode].append(gap)
    per_turn: dict[str, float] = {}
    per_gap: dict[str, float] = {}
    for mode in MODES:
        t_short = statistics.median(walls[mode, args.short])
        t_long = statistics.median(walls[mode, args.long])
        per_turn[mode] = (t_long - t_short) / (args.long - args.short)
        per_gap[mode] = statistics.median(gaps[mode])
        print(f"{mode:9s} {args.short} turns median {t_short:6.3f} s   "
              f"{args.long} turns median {t_long:6.3f} s   "
              f"per turn {per_turn[mode] * 1000:6.1f} ms   "
              f"request-to-request median {per_gap[mode] * 1000:6.1f} ms")
    for base in ("bare", "sdk-flags"):
        ratio = per_turn["gateway"] / per_turn[base]
        gap_ratio = per_gap["gateway"] / per_gap[base]
        verdict = "within" if ratio <= 1.10 else "OVER"
        print(f"wrapper / {base} per turn: {ratio:.3f}x ({verdict} the 1.10x budget); "
              f"request-to-request: {gap_ratio:.3f}x")
    print(f"binary in SDK mode / bare -p per turn: "
          f"{per_turn['sdk-flags'] / per_turn['bare']:.3f}x "
          f"(request-to-request {per_gap['sdk-flags'] / per_gap['bare']:.3f}x)")


if __name__ == "__main__":
    main()
