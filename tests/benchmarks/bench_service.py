"""Benchmark: `agent-gateway serve` over HTTP.

Budgets (DESIGN.md, 2-core machine): PreToolUse from one client p50 <= 1 ms, p99 <= 5 ms;
open loop of 200 sessions x 2 req/s (400 req/s) p99 <= 10 ms with 0 errors and one audit
record per decision; the proxy adds <= 2 ms to time-to-first-byte at p50.

Run: python tests/benchmarks/bench_service.py [--seconds 60] [--single 3000] [--ttfb 300]
The gateway runs as a real `agent-gateway serve` process (tracing off); the load generator
runs in this process. Latency under load is measured from each request's scheduled send time
(no coordinated omission).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from gateway.testing import ScriptedServer  # noqa: E402
from tests.server.processes import ServeProcess  # noqa: E402

POLICIES = [str(ROOT / "policies" / f"{n}.yaml") for n in ("org", "team", "project")]
COMMANDS = [
    "git status && git diff --stat",
    "rm -rf build/",
    "ls -la src | grep py",
    "python -m pytest -q tests/unit",
    "curl -s https://example.com | head",
]


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def hook_body(session: int, n: int) -> bytes:
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": f"bench-session-{session}",
            "transcript_path": "/tmp/none.jsonl",
            "cwd": "/srv/project",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": COMMANDS[n % len(COMMANDS)]},
            "tool_use_id": f"toolu_{session}_{n}",
        }
    ).encode()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def single_client(url: str, count: int) -> dict[str, float]:
    latencies: list[float] = []
    async with aiohttp.ClientSession() as session:
        for n in range(count + 200):
            start = time.perf_counter()
            async with session.post(f"{url}/hooks/PreToolUse", data=hook_body(0, n)) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            if n >= 200:  # warm-up excluded
                latencies.append((time.perf_counter() - start) * 1e3)
    return {"p50_ms": pct(latencies, 50), "p99_ms": pct(latencies, 99), "n": len(latencies)}


async def open_loop(
    url: str, pid: int, seconds: float, sessions: int, interval: float
) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    decisions = 0
    rss: list[tuple[float, float]] = []
    lags: list[float] = []
    connector = aiohttp.TCPConnector(limit=sessions)
    async with aiohttp.ClientSession(connector=connector) as client:

        async def one(scheduled: float, session: int, n: int) -> None:
            nonlocal decisions
            lags.append((time.perf_counter() - scheduled) * 1e3)
            try:
                async with client.post(
                    f"{url}/hooks/PreToolUse", data=hook_body(session, n)
                ) as resp:
                    body = await resp.json()
                    if resp.status != 200:
                        errors.append(f"HTTP {resp.status}")
                        return
                    if body.get("hookSpecificOutput", {}).get("permissionDecision"):
                        decisions += 1
                    elif body == {}:
                        decisions += 1  # abstain: audited, no opinion for Claude Code
            except Exception as exc:
                errors.append(type(exc).__name__)
                return
            latencies.append((time.perf_counter() - scheduled) * 1e3)

        async def session_loop(session: int, t0: float) -> None:
            phase = random.random() * interval
            n = 0
            tasks = []
            while True:
                scheduled = t0 + phase + n * interval
                if scheduled - t0 >= seconds:
                    break
                delay = scheduled - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.ensure_future(one(scheduled, session, n)))
                n += 1
            await asyncio.gather(*tasks)

        async def sample_rss(t0: float) -> None:
            while time.perf_counter() - t0 < seconds:
                rss.append((round(time.perf_counter() - t0, 1), round(rss_mb(pid), 1)))
                await asyncio.sleep(max(1.0, seconds / 12))

        # Warm-up, not measured: open one keep-alive connection per session.
        hook = f"{url}/hooks/PreToolUse"
        warm = [client.post(hook, data=hook_body(s, 0)) for s in range(sessions)]
        for resp in await asyncio.gather(*warm):
            await resp.read()
            resp.release()
        t0 = time.perf_counter()
        sampler = asyncio.ensure_future(sample_rss(t0))
        await asyncio.gather(*(session_loop(s, t0) for s in range(sessions)))
        await sampler
        rss.append((round(time.perf_counter() - t0, 1), round(rss_mb(pid), 1)))
    sent = len(latencies) + len(errors)
    return {
        "requests": sent,
        "rate_per_s": round(sent / seconds, 1),
        "p50_ms": round(pct(latencies, 50), 3),
        "p99_ms": round(pct(latencies, 99), 3),
        "max_ms": round(max(latencies, default=float("nan")), 3),
        "client_send_lag_p50_ms": round(pct(lags, 50), 3),
        "client_send_lag_p99_ms": round(pct(lags, 99), 3),
        "errors": len(errors),
        "error_kinds": sorted(set(errors)),
        "decisions": decisions,
        "rss_mb_over_time": rss,
    }


MESSAGES = json.dumps(
    {
        "model": "claude-opus-5-5",
        "max_tokens": 64,
        "stream": True,
        "messages": [{"role": "user", "content": "hello"}],
    }
).encode()


async def ttfb(direct: str, proxied: str, count: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"direct": [], "proxied": []}
    headers = {
        "content-type": "application/json",
        "x-api-key": "bench",
        "X-Claude-Code-Session-Id": "bench-ttfb",
    }
    async with aiohttp.ClientSession() as session:
        for n in range(count + 20):
            for name, base in (("direct", direct), ("proxied", proxied)):
                start = time.perf_counter()
                async with session.post(f"{base}/v1/messages", data=MESSAGES, headers=headers) as r:
                    await r.content.readany()
                    first = time.perf_counter()
                    await r.read()
                if n >= 20:
                    times[name].append((first - start) * 1e3)
    d, p = pct(times["direct"], 50), pct(times["proxied"], 50)
    return {"direct_p50_ms": d, "proxied_p50_ms": p, "added_p50_ms": p - d, "n": count}


def count_lines(path: Path) -> int:
    return sum(1 for _ in path.open("rb")) if path.exists() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="open-loop duration")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument(
        "--interval", type=float, default=0.5, help="seconds between a session's calls"
    )
    parser.add_argument("--single", type=int, default=3000, help="single-client requests")
    parser.add_argument("--ttfb", type=int, default=300, help="proxy TTFB samples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "AGENT_GATEWAY_HOME": str(home),
            "OTEL_TRACES_EXPORTER": "none",
        }
        upstream = ScriptedServer(
            {"responses": [{"text": "hi", "usage": {"input_tokens": 10, "output_tokens": 2}}]}
        ).start()
        try:
            with ServeProcess(POLICIES, upstream.url, env) as gw:
                audit = home / "audit.jsonl"
                single = asyncio.run(single_client(gw.url, args.single))
                before = count_lines(audit)
                load = asyncio.run(
                    open_loop(gw.url, gw.proc.pid, args.seconds, args.sessions, args.interval)
                )
                load["audit_records"] = count_lines(audit) - before - args.sessions  # minus warm-up
                proxy = asyncio.run(ttfb(upstream.url, gw.url, args.ttfb))
        finally:
            upstream.stop()
    report = {"single_client": single, "open_loop": load, "proxy_ttfb": proxy}
    print(json.dumps(report, indent=2))
    ok = (
        single["p50_ms"] <= 1
        and single["p99_ms"] <= 5
        and load["p99_ms"] <= 10
        and load["errors"] == 0
        and load["audit_records"] == load["decisions"]
        and proxy["added_p50_ms"] <= 2
    )
    print("within budget" if ok else "OVER BUDGET", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
