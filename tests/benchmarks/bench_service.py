"""Benchmark: `agent-gateway serve` over HTTP.

Budgets (2-core machine), for `serve` as a user runs it (token auth on via
AGENT_GATEWAY_TOKEN, the audit log on, tracing to the default local span file, decisions in
worker processes): `POST /hooks/PreToolUse` with a ~120-character compound Bash command from
one keep-alive client p50 <= 0.7 ms, p99 <= 2 ms; open loop of 200 sessions x 2 req/s
(400 req/s) p99 <= 10 ms with 0 errors and one audit record per decision; the proxy adds
<= 1 ms to time-to-first-byte at p50; the gateway's RSS grows by at most STREAM_RSS_MB while
it proxies one long SSE response, 1 MB or 10 MB alike (its memory per stream does not grow
with the response).

Run: python tests/benchmarks/bench_service.py [--seconds 60] [--single 3000] [--ttfb 300]
     [--generators 1] [--trail] [--budgets] [--stream-mb 1 10]
Needs only the project's own dependencies (aiohttp); nothing else to install.

Every decision is appended to the audit log and its checkpoint. `--trail` turns the rest of the
audit trail on, as in production: an audit key (every record and checkpoint MACed) and the
log export (one OTLP log record per decision, to an OTLP receiver in this process); the run
then checks that every decision arrived and that `audit verify --against` the received copy
passes.

`--budgets` adds the proxy's time to first byte with team budgets on: a second gateway with
a tokens file and Redis (a private redis-server, as the tests start it), each request sent
in turn directly, with the token of a team without a budget, and with the token of a team
with one (a reservation in Redis before forwarding, a settle after), for a small body and a
Claude Code-sized one (50 KB); `budget_added_p50_ms` is the budgeted request's p50 minus the
direct one's, `budget_cost_p50_ms` its p50 minus the unbudgeted one's.

The gateway runs as a real `agent-gateway serve` process. The single-client and
TTFB figures are taken from this process with aiohttp's client. The open-loop load comes from
separate generator process(es) (a small asyncio HTTP/1.1 client over keep-alive connections),
so generating load never runs on, or waits for, an event loop that is also measuring: every
call has a fixed intended send time, latency is measured from that time (no coordinated
omission), and how late each send actually left is reported as send_late_*. Gateway and
generator CPU are reported too: on 2 cores they share the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from gateway.audit.commands import audit_verify  # noqa: E402
from gateway.scripted import ScriptedServer  # noqa: E402
from tests.otlp_receiver import OtlpReceiver  # noqa: E402
from tests.server.processes import ServeProcess, ThreadedApp  # noqa: E402

POLICIES = [str(ROOT / "policies" / f"{n}.yaml") for n in ("org", "team", "project")]
COMMAND = (
    "cd /srv/project && git status --short && git diff --stat HEAD~1 | tail -n 5 "
    "&& python -m pytest -q tests/unit -x 2>&1 | tail -n 20"
)
"""A compound Bash command of about 120 characters, as Claude Code sends them."""
TOKEN = "bench-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


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
            "tool_input": {"command": COMMAND},
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
    async with aiohttp.ClientSession(headers=AUTH) as session:
        for n in range(count + 200):
            start = time.perf_counter()
            async with session.post(f"{url}/hooks/PreToolUse", data=hook_body(0, n)) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            if n >= 200:  # warm-up excluded
                latencies.append((time.perf_counter() - start) * 1e3)
    return {"p50_ms": pct(latencies, 50), "p99_ms": pct(latencies, 99), "n": len(latencies)}


# --- open-loop load generator -------------------------------------------------------------
# It runs in its own process(es), so its work never runs on the gateway's event loop and
# never delays the measurement of its own sends, with a small asyncio HTTP/1.1 client (one
# keep-alive connection per session, another one opened if a reply is still outstanding
# when the next call is due). Every call has a fixed intended send time; latency is measured
# from that time, so a late send or a queued reply counts against the gateway, and how late
# each send actually left is recorded separately (the generator's own lateness).


class _Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection; one request in flight at a time."""

    def __init__(self, worker: _Worker, session: int) -> None:
        self.worker, self.session = worker, session
        self.transport: asyncio.Transport | None = None
        self.buf = b""
        self.scheduled = 0.0
        self.busy = False
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def send(self, request: bytes, scheduled: float) -> None:
        assert self.transport is not None
        self.busy, self.scheduled, self.buf = True, scheduled, b""
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        head_end = self.buf.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buf[:head_end].decode("latin-1").split("\r\n")
        length = -1
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if length < 0:
            self._done(f"no Content-Length: {head[0]}", None)
            return
        if len(self.buf) - head_end - 4 < length:
            return
        body = self.buf[head_end + 4 : head_end + 4 + length]
        status = head[0].split(" ", 2)[1] if head[0].count(" ") else "?"
        self._done(None if status == "200" else f"HTTP {status}", body)

    def _done(self, error: str | None, body: bytes | None) -> None:
        finished = time.monotonic()
        self.busy, self.buf = False, b""
        self.worker.finished(self, self.scheduled, finished, error, body)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.busy:
            self.busy = False
            self.worker.finished(self, self.scheduled, time.monotonic(), "connection lost", None)
        self.transport = None
        idle = self.worker.idle[self.session]
        if self in idle:  # closed by the server while idle: never reused
            idle.remove(self)
        if not self.closed.done():
            self.closed.set_result(None)


class _Worker:
    """One generator process's share of the sessions."""

    def __init__(self, host: str, port: int, sessions: list[int]) -> None:
        self.host, self.port, self.sessions = host, port, sessions
        self.idle: dict[int, list[_Conn]] = {s: [] for s in sessions}
        self.latencies: list[float] = []
        self.lateness: list[float] = []
        self.errors: list[str] = []
        self.decisions = 0
        self.extra_connections = 0
        self.outstanding = 0
        self.drained: asyncio.Future[None] | None = None
        self.closed_until = 0.0
        """In a closed loop (closed_loop), when connections stop sending their next call."""
        self.sent: dict[int, int] = dict.fromkeys(sessions, 0)

    async def connect(self, session: int) -> _Conn:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(lambda: _Conn(self, session), self.host, self.port)
        return conn

    def request(self, session: int, n: int) -> bytes:
        body = hook_body(session, n)
        return (
            b"POST /hooks/PreToolUse HTTP/1.1\r\nHost: %s:%d\r\n"
            b"Authorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (self.host.encode(), self.port, TOKEN.encode(), len(body))
        ) + body

    def finished(
        self, conn: _Conn, scheduled: float, done: float, error: str | None, body: bytes | None
    ) -> None:
        self.outstanding -= 1
        if error is None and body is not None:
            try:
                answer = json.loads(body)
                if answer.get("hookSpecificOutput", {}).get("permissionDecision") or answer == {}:
                    self.decisions += 1  # {} is an audited abstain
                else:
                    error = "no decision in reply"
            except ValueError:
                error = "reply is not JSON"
        if error is None:
            self.latencies.append((done - scheduled) * 1e3)
            if done < self.closed_until:  # closed loop: the next call as soon as this answered
                self.outstanding += 1
                self.sent[conn.session] += 1
                conn.send(self.request(conn.session, self.sent[conn.session]), done)
            else:
                self.idle[conn.session].append(conn)
        else:
            self.errors.append(error)
            if conn.transport is not None:
                conn.transport.close()
        if self.outstanding == 0 and self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    async def _send_new(self, session: int, request: bytes, scheduled: float) -> None:
        try:
            conn = await self.connect(session)
        except OSError as exc:
            self.outstanding -= 1
            self.errors.append(type(exc).__name__)
            return
        self.lateness.append((time.monotonic() - scheduled) * 1e3)
        conn.send(request, scheduled)

    async def run(self, t0: float, seconds: float, interval: float, seed: int) -> None:
        rng = random.Random(seed)
        plan: list[tuple[float, int, int]] = []
        for s in self.sessions:
            phase = rng.random() * interval
            n = 0
            while phase + n * interval < seconds:
                plan.append((t0 + phase + n * interval, s, n))
                n += 1
        plan.sort()
        requests = [self.request(s, n) for _, s, n in plan]  # built before the clock starts
        pending: set[asyncio.Task[None]] = set()
        loop = asyncio.get_running_loop()
        for (scheduled, session, _), request in zip(plan, requests, strict=True):
            delay = scheduled - time.monotonic()
            if delay > 0:
                # asyncio rounds timer waits up to whole milliseconds: wake early, then yield.
                await asyncio.sleep(max(0.0, delay - 0.001))
                while time.monotonic() < scheduled:
                    await asyncio.sleep(0)
            self.outstanding += 1
            idle = self.idle[session]
            if idle:
                self.lateness.append((time.monotonic() - scheduled) * 1e3)
                idle.pop().send(request, scheduled)
            else:  # the previous reply is still outstanding: a second connection
                self.extra_connections += 1
                task = loop.create_task(self._send_new(session, request, scheduled))
                pending.add(task)
                task.add_done_callback(pending.discard)
        if self.outstanding:
            self.drained = loop.create_future()
            try:
                await asyncio.wait_for(self.drained, timeout=30)
            except TimeoutError:
                self.errors.extend(["no reply within 30 s"] * self.outstanding)

    async def closed_loop(self, t0: float, seconds: float) -> None:
        """Every session's connection sends its next call the moment the last one is
        answered, from t0 for `seconds`; then waits for the calls in flight."""
        self.closed_until = t0 + seconds
        await asyncio.sleep(max(0.0, t0 - time.monotonic()))
        loop = asyncio.get_running_loop()
        self.drained = loop.create_future()
        for session in self.sessions:
            self.outstanding += 1
            self.sent[session] += 1
            self.idle[session].pop().send(self.request(session, self.sent[session]),
                                          time.monotonic())
        try:
            await asyncio.wait_for(self.drained, timeout=seconds + 30)
        except TimeoutError:
            self.errors.extend(["no reply within 30 s"] * self.outstanding)

    def close(self) -> None:
        for conns in self.idle.values():
            for conn in conns:
                if conn.transport is not None:
                    conn.transport.close()


def _generator_process(
    host: str,
    port: int,
    sessions: list[int],
    seconds: float,
    interval: float,
    seed: int,
    conn: Any,
    closed: bool = False,
    cpus: set[int] | None = None,
) -> None:
    """Entry point of a generator process: warm up, report ready, wait for t0, run (open
    loop, or closed with `closed`), report. `cpus`: the cores it may run on."""
    if cpus:
        os.sched_setaffinity(0, cpus)

    async def main() -> dict[str, Any]:
        worker = _Worker(host, port, sessions)
        for s in sessions:  # warm-up (not measured): one keep-alive connection per session
            c = await worker.connect(s)
            worker.outstanding += 1
            c.send(worker.request(s, 0), time.monotonic())
        while worker.outstanding:
            await asyncio.sleep(0.01)
        warm_errors = len(worker.errors)
        worker.latencies.clear()
        worker.lateness.clear()
        worker.decisions = 0
        conn.send("ready")
        t0 = float(await asyncio.get_running_loop().run_in_executor(None, conn.recv))
        cpu0 = time.process_time()
        if closed:
            await worker.closed_loop(t0, seconds)
        else:
            await worker.run(t0, seconds, interval, seed)
        cpu = time.process_time() - cpu0
        worker.close()
        return {
            "latencies": worker.latencies,
            "lateness": worker.lateness,
            "errors": worker.errors,
            "warm_errors": warm_errors,
            "decisions": worker.decisions,
            "extra_connections": worker.extra_connections,
            "cpu_s": cpu,
        }

    conn.send(asyncio.run(main()))


def proc_cpu_s(pid: int) -> float:
    """CPU seconds of the gateway and every process below it (its decision workers)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue  # it exited meanwhile
    return total / os.sysconf("SC_CLK_TCK")


def machine_cpu_s() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine so far, all cores together."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def open_loop(
    url: str, pid: int, seconds: float, sessions: int, interval: float, workers: int,
    *, closed: bool = False, generator_cpus: set[int] | None = None,
) -> dict[str, Any]:
    """Run the generator processes against `url`; gateway RSS and CPU sampled meanwhile.
    `closed`: each session's connection calls again as soon as it is answered (`interval`
    unused), so the rate is what the gateway sustains."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    ctx = multiprocessing.get_context("spawn")
    pipes, procs = [], []
    for w in range(workers):
        parent, child = ctx.Pipe()
        share = list(range(w, sessions, workers))
        proc = ctx.Process(
            target=_generator_process,
            args=(host, int(port), share, seconds, interval, 1000 + w, child, closed,
                  generator_cpus),
            daemon=True,
        )
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    for p in pipes:
        if not p.poll(60) or p.recv() != "ready":
            raise RuntimeError("load generator did not start")
    t0 = time.monotonic() + 0.5
    for p in pipes:
        p.send(t0)
    cpu0 = proc_cpu_s(pid)
    busy0, steal0 = machine_cpu_s()
    rss: list[tuple[float, float]] = []
    step = max(1.0, seconds / 12)
    while time.monotonic() < t0:
        time.sleep(0.01)
    while (elapsed := time.monotonic() - t0) < seconds:
        rss.append((round(elapsed, 1), round(rss_mb(pid), 1)))
        time.sleep(min(step, max(0.0, seconds - elapsed)))
    rss.append((round(time.monotonic() - t0, 1), round(rss_mb(pid), 1)))
    server_cpu = proc_cpu_s(pid) - cpu0
    busy1, steal1 = machine_cpu_s()
    results = [p.recv() for p in pipes]
    for proc in procs:
        proc.join(10)
    latencies = [x for r in results for x in r["latencies"]]
    lateness = [x for r in results for x in r["lateness"]]
    errors = [x for r in results for x in r["errors"]]
    sent = len(latencies) + len(errors)
    generator_cpu = sum(r["cpu_s"] for r in results)
    return {
        "requests": sent,
        "rate_per_s": round(sent / seconds, 1),
        "decisions_per_s": round(sum(r["decisions"] for r in results) / seconds, 1),
        "generator_processes": workers,
        "p50_ms": round(pct(latencies, 50), 3),
        "p99_ms": round(pct(latencies, 99), 3),
        "p999_ms": round(pct(latencies, 99.9), 3),
        "max_ms": round(max(latencies, default=float("nan")), 3),
        "send_late_p50_ms": round(pct(lateness, 50), 3),
        "send_late_p99_ms": round(pct(lateness, 99), 3),
        "send_late_max_ms": round(max(lateness, default=float("nan")), 3),
        "sends_late_over_1ms": sum(1 for x in lateness if x > 1),
        "extra_connections": sum(r["extra_connections"] for r in results),
        "errors": len(errors),
        "error_kinds": sorted(set(errors)),
        "warm_up_errors": sum(r["warm_errors"] for r in results),
        "decisions": sum(r["decisions"] for r in results),
        "gateway_cpu_pct": round(server_cpu / seconds * 100, 1),
        "generator_cpu_pct": round(generator_cpu / seconds * 100, 1),
        # Everything else on the machine meanwhile (100% = one core): other processes here
        # compete for the same 2 cores and show up in the tail.
        "other_cpu_pct": round((busy1 - busy0 - server_cpu - generator_cpu) / seconds * 100, 1),
        "steal_pct": round((steal1 - steal0) / seconds * 100, 1),
        "rss_mb_over_time": rss,
    }


STREAM_RSS_MB = 16
"""Growth of the gateway's RSS allowed while it proxies one long response, whatever its
length."""
MESSAGES = json.dumps(
    {
        "model": "claude-opus-5-5",
        "max_tokens": 64,
        "stream": True,
        "messages": [{"role": "user", "content": "hello"}],
    }
).encode()


async def ttfb(direct: str, proxied: str, count: int) -> dict[str, float]:
    """Each sample sends the same request directly and through the gateway, in turn."""
    times: dict[str, list[float]] = {"direct": [], "proxied": []}
    headers = {
        "content-type": "application/json",
        "x-api-key": "bench",
        "X-Claude-Code-Session-Id": "bench-ttfb",
    }
    runs = (("direct", direct, headers),
            ("proxied", proxied, {**headers, "X-Agent-Gateway-Token": TOKEN}))
    async with aiohttp.ClientSession() as session:
        for n in range(count + 20):
            for name, base, sent in runs:
                start = time.perf_counter()
                async with session.post(f"{base}/v1/messages", data=MESSAGES, headers=sent) as r:
                    assert r.status == 200, (name, r.status)
                    await r.content.readany()
                    first = time.perf_counter()
                    await r.read()
                if n >= 20:
                    times[name].append((first - start) * 1e3)
    d, p = pct(times["direct"], 50), pct(times["proxied"], 50)
    added = sorted(b - a for a, b in zip(times["direct"], times["proxied"], strict=True))
    return {"direct_p50_ms": d, "proxied_p50_ms": p, "added_p50_ms": p - d,
            "paired_added_p25_p50_p75_ms": [pct(added, 25), pct(added, 50), pct(added, 75)],
            "proxied_p99_ms": pct(times["proxied"], 99), "n": count}


def long_stream_app(megabytes: float) -> web.Application:
    """An upstream that answers every request with one long streamed text: about
    `megabytes` of SSE in deltas of ~90 characters, written in 64 KB writes."""

    def sse(event: dict[str, Any]) -> bytes:
        return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()

    delta = sse({"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "All work and no play. " * 4}})
    head = sse({"type": "message_start", "message": {
        "id": "msg_long", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
        "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})
    head += sse({"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}})
    tail = sse({"type": "content_block_stop", "index": 0})
    tail += sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                 "usage": {"output_tokens": 100000}})
    tail += sse({"type": "message_stop"})
    count = int(megabytes * 2**20 / len(delta))
    per_write = max(1, 64 * 1024 // len(delta))

    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(head)
        for sent in range(0, count, per_write):
            await response.write(delta * min(per_write, count - sent))
        await response.write(tail)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    return app


async def stream_rss(url: str, pid: int) -> dict[str, Any]:
    """Peak RSS of the gateway (its own process, not the decision workers) while it proxies
    one long SSE response, sampled every 5 ms; read slowly enough that the stream is in
    flight through the gateway, not buffered by it."""
    headers = {"content-type": "application/json", "x-api-key": "bench",
               "X-Claude-Code-Session-Id": f"bench-stream-{time.monotonic_ns()}",
               "X-Agent-Gateway-Token": TOKEN}
    before = rss_mb(pid)
    peak = before
    received = 0
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/messages", data=MESSAGES, headers=headers) as r,
    ):
        assert r.status == 200, r.status
        last = 0.0
        async for block in r.content.iter_chunked(256 * 1024):
            received += len(block)
            if time.monotonic() - last > 0.005:
                peak, last = max(peak, rss_mb(pid)), time.monotonic()
    await asyncio.sleep(0.2)  # the span built after the stream ended
    return {"response_mb": round(received / 2**20, 1), "rss_before_mb": round(before, 1),
            "rss_peak_mb": round(max(peak, rss_mb(pid)), 1),
            "rss_growth_mb": round(max(peak, rss_mb(pid)) - before, 1)}


def big_messages(kb: int) -> bytes:
    """A body the size of Claude Code's (model first, max_tokens after the conversation)."""
    filler = "x" * 1000
    turns = [{"role": "user", "content": filler} for _ in range(kb)]
    return json.dumps({"model": "claude-opus-5-5", "messages": turns, "max_tokens": 128000,
                       "stream": True}).encode()


async def budget_ttfb(direct: str, proxied: str, count: int, body: bytes) -> dict[str, float]:
    times: dict[str, list[float]] = {"direct": [], "free": [], "budget": []}
    base = {"content-type": "application/json", "x-api-key": "bench"}
    runs = (
        ("direct", direct, {"X-Claude-Code-Session-Id": "bench-direct"}),
        ("free", proxied, {"X-Agent-Gateway-Token": "tok-free",
                           "X-Claude-Code-Session-Id": "bench-free"}),
        ("budget", proxied, {"X-Agent-Gateway-Token": "tok-team",
                             "X-Claude-Code-Session-Id": "bench-team"}),
    )
    async with aiohttp.ClientSession() as session:
        for n in range(count + 20):
            for name, url, extra in runs:
                start = time.perf_counter()
                async with session.post(f"{url}/v1/messages", data=body,
                                        headers={**base, **extra}) as r:
                    assert r.status == 200, (name, r.status, await r.text())
                    await r.content.readany()
                    first = time.perf_counter()
                    await r.read()
                if n >= 20:
                    times[name].append((first - start) * 1e3)
    d, f, b = (pct(times[k], 50) for k in ("direct", "free", "budget"))
    return {"direct_p50_ms": d, "free_p50_ms": f, "budget_p50_ms": b,
            "budget_added_p50_ms": b - d, "budget_cost_p50_ms": b - f,
            "budget_p99_ms": pct(times["budget"], 99), "n": count, "body_bytes": len(body)}


def budgets_on(upstream: str, env: dict[str, str], tmp: Path, count: int) -> dict[str, Any]:
    from tests.redis_server import RedisServer

    tokens = Path(tmp, "tokens.yaml")
    tokens.write_text("tokens:\n  - {token: tok-free, name: free}\n"
                      "  - {token: tok-team, name: team, budget: {usd: 1000000, per: day}}\n")
    (Path(tmp) / "redis").mkdir()
    with RedisServer(Path(tmp) / "redis") as redis:
        gw_env = {**env, "AGENT_GATEWAY_TOKENS_FILE": str(tokens),
                  "AGENT_GATEWAY_HOME": str(Path(tmp, "home-budgets"))}
        with ServeProcess(POLICIES, upstream, gw_env, args=["--redis-url", redis.url]) as gw:
            small = asyncio.run(budget_ttfb(upstream, gw.url, count, MESSAGES))
            large = asyncio.run(budget_ttfb(upstream, gw.url, count, big_messages(50)))
    return {"small_body": small, "claude_code_sized_body": large}


def check_trail(
    receiver: OtlpReceiver, audit: Path, tmp: Path, env: dict[str, str]
) -> dict[str, Any]:
    """After the service has stopped (its last batch flushed): every decision's log record
    arrived, and the local log verifies with the key and against the received copy."""
    records = count_lines(audit)
    logs = receiver.wait_for_logs(lambda got: len(got) >= records, timeout=30)
    copy = receiver.write_log_lines(tmp / "received.jsonl")
    saved = {k: os.environ.get(k) for k in ("AGENT_GATEWAY_AUDIT_KEY_FILE",)}
    os.environ["AGENT_GATEWAY_AUDIT_KEY_FILE"] = env["AGENT_GATEWAY_AUDIT_KEY_FILE"]
    try:
        started = time.perf_counter()
        code = audit_verify(str(audit), against=str(copy))
        verify_s = time.perf_counter() - started
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {
        "audit_records": records,
        "log_records_received": len(logs),
        "verify_against_ok": code == 0 and len(logs) == records,
        "verify_against_s": round(verify_s, 2),
    }


def count_lines(path: Path) -> int:
    return sum(1 for _ in path.open("rb")) if path.exists() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="open-loop duration")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument(
        "--interval", type=float, default=0.5, help="seconds between a session's calls"
    )
    parser.add_argument("--generators", type=int, default=1, help="load generator processes")
    parser.add_argument("--single", type=int, default=3000, help="single-client requests")
    parser.add_argument("--ttfb", type=int, default=300, help="proxy TTFB samples")
    parser.add_argument(
        "--trail", action="store_true", help="audit key and OTLP log export on (see above)"
    )
    parser.add_argument(
        "--budgets", action="store_true", help="also the proxy's TTFB with team budgets on"
    )
    parser.add_argument("--stream-mb", type=float, nargs="*", default=[1.0, 10.0],
                        help="sizes of the long SSE responses streamed for peak RSS")
    args = parser.parse_args()
    receiver = OtlpReceiver().start() if args.trail else None
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp, "home")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "AGENT_GATEWAY_HOME": str(home),
            # As a user runs it: token auth on; tracing to the default local span file.
            "AGENT_GATEWAY_TOKEN": TOKEN,
        }
        if receiver is not None:
            key = Path(tmp, "audit.key")
            key.write_text(os.urandom(32).hex() + "\n")
            env.update(
                AGENT_GATEWAY_AUDIT_KEY_FILE=str(key),
                OTEL_LOGS_EXPORTER="otlp",
                OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            )
        upstream = ScriptedServer(
            {"responses": [{"text": "hi", "usage": {"input_tokens": 10, "output_tokens": 2}}]}
        ).start()
        try:
            with ServeProcess(POLICIES, upstream.url, env) as gw:
                audit = home / "audit.jsonl"
                single = asyncio.run(single_client(gw.url, args.single))
                before = count_lines(audit)
                load = open_loop(
                    gw.url,
                    gw.proc.pid,
                    args.seconds,
                    args.sessions,
                    args.interval,
                    args.generators,
                )
                load["audit_records"] = count_lines(audit) - before - args.sessions  # minus warm-up
                proxy = asyncio.run(ttfb(upstream.url, gw.url, args.ttfb))
            streams = {}
            for mb in args.stream_mb:
                with ThreadedApp(long_stream_app(mb)) as long_upstream, ServeProcess(
                    POLICIES, long_upstream.url, {**env, "AGENT_GATEWAY_HOME": str(home) + "-s"}
                ) as gw:
                    streams[f"{mb:g}_mb"] = asyncio.run(stream_rss(gw.url, gw.proc.pid))
            trail = check_trail(receiver, audit, Path(tmp), env) if receiver else None
            budgets = budgets_on(upstream.url, env, Path(tmp), args.ttfb) if args.budgets else None
        finally:
            upstream.stop()
            if receiver is not None:
                receiver.stop()
    report = {"single_client": single, "open_loop": load, "proxy_ttfb": proxy,
              "proxy_stream_rss": streams}
    if trail is not None:
        report["trail"] = trail
    if budgets is not None:
        report["proxy_ttfb_with_budgets"] = budgets
    print(json.dumps(report, indent=2))
    ok = (
        single["p50_ms"] <= 0.7
        and single["p99_ms"] <= 2
        and load["p99_ms"] <= 10
        and load["errors"] == 0
        and load["audit_records"] == load["decisions"]
        and proxy["added_p50_ms"] <= 1
        and all(s["rss_growth_mb"] <= STREAM_RSS_MB for s in streams.values())
        and (trail is None or trail["verify_against_ok"])
        and (budgets is None or all(b["budget_added_p50_ms"] <= 1 for b in budgets.values()))
    )
    print("within budget" if ok else "OVER BUDGET", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
