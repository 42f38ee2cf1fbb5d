"""Benchmark: what oversized and large request bodies cost `agent-gateway serve`'s memory.

The report: six 65 MiB bodies in a row to /v1/messages took the replica's RSS from 62 to
450 MB; ten at once peaked at 1,054 MB and 772 MB stayed held afterwards. This runs a real
`serve` (auth off, audit and tracing on, the default) in front of a stand-in upstream that
reads each body as it comes and keeps nothing, and samples the gateway process's RSS every
10 ms (its decision workers are other processes: they never see these bodies):

- `oversized`: bodies over the Messages API limit, with Content-Length and chunked, in a row
  (--in-a-row each) and at once (--at-once each), to /v1/messages and /hooks/PreToolUse;
- `large`: --at-once valid 20 MiB bodies at once to /v1/messages, each answered after the
  upstream read it whole (streamed through, not held).

For each: RSS before, the peak during, and after (1 s later); every answer's status.

Run: python tests/benchmarks/bench_proxy_bodies.py [--in-a-row 6] [--at-once 10]
     [--size-mib 65]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from tests.server.processes import ServeProcess, ThreadedApp  # noqa: E402
from tests.server.test_proxy_bodies import Upstream  # noqa: E402

MiB = 1024 * 1024
Body = bytes | Callable[[], Iterator[bytes]]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def chunked(total: int) -> Callable[[], Iterator[bytes]]:
    def blocks() -> Iterator[bytes]:
        block = b" " * (64 * 1024)
        for _ in range(total // len(block)):
            yield block
    return blocks


def send(port: int, path: str, body: Body) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        if isinstance(body, bytes):
            conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        else:
            conn.putrequest("POST", path)
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            try:
                for block in body():
                    conn.send(b"%x\r\n%s\r\n" % (len(block), block))
                conn.send(b"0\r\n\r\n")
            except OSError:
                pass
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return -1
    finally:
        conn.close()


class Sampler:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mib(self.pid))
            time.sleep(0.01)

    def __enter__(self) -> Sampler:
        self.peak = rss_mib(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def phase(port: int, pid: int, name: str, jobs: list[tuple[str, Body]], concurrent: bool
          ) -> dict[str, Any]:
    before = rss_mib(pid)
    statuses: list[int] = []
    started = time.monotonic()
    with Sampler(pid) as sampler:
        if concurrent:
            threads = [threading.Thread(target=lambda j=j: statuses.append(send(port, *j)))
                       for j in jobs]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            statuses = [send(port, *job) for job in jobs]
        took = time.monotonic() - started
        time.sleep(1)
    return {"phase": name, "requests": len(jobs), "seconds": round(took, 2),
            "rss_before_mib": round(before, 1), "rss_peak_mib": round(sampler.peak, 1),
            "rss_after_mib": round(rss_mib(pid), 1), "statuses": dict(Counter(statuses))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-a-row", type=int, default=6)
    parser.add_argument("--at-once", type=int, default=10)
    parser.add_argument("--size-mib", type=int, default=65)
    args = parser.parse_args()
    size = args.size_mib * MiB
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "org.yaml"
        policy.write_text("version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_GATEWAY_")}
        env["AGENT_GATEWAY_HOME"] = str(Path(tmp) / "home")
        with ThreadedApp(Upstream().app()) as upstream, \
                ServeProcess([str(policy)], upstream.url, env) as serve:
            port, pid = serve.port, serve.proc.pid
            send(port, "/v1/messages", b"{}")
            over: list[tuple[str, Body]] = [
                ("/v1/messages", b"x" * size), ("/v1/messages", chunked(size)),
                ("/hooks/PreToolUse", b"x" * size), ("/hooks/PreToolUse", chunked(size)),
            ]
            results = [
                phase(port, pid, f"oversized {path} {'chunked' if callable(body) else 'length'}"
                      " in a row", [(path, body)] * args.in_a_row, False)
                for path, body in over
            ]
            results.append(phase(port, pid, "oversized, all four kinds at once",
                                 over * (args.at_once // 2), True))
            results.append(phase(port, pid, "valid 20 MiB /v1/messages at once",
                                 [("/v1/messages", b"x" * (20 * MiB))] * args.at_once, True))
    for row in results:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
