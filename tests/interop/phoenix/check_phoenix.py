"""Interop check: an `agent-gateway run` traced into Arize Phoenix, read back through its client.

Not part of the test run (tests/interop is excluded): it installs Phoenix from PyPI into its
own virtualenv (first time only), so run it by hand:

    .venv/bin/python tests/interop/phoenix/check_phoenix.py [--venv DIR] [--keep]

It starts `phoenix serve` on free loopback ports with a throwaway working directory, runs the
real Claude Code through `agent-gateway run` against the scripted Messages API (a tool call,
a policy deny, a failing tool, a final answer) with content capture on and
`OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=...`, then asks Phoenix's own client
(`phoenix.client`, run inside Phoenix's virtualenv) for the spans of that project and checks
that they arrived as a Phoenix user expects: filed in the named project; span kinds AGENT,
LLM, TOOL and CHAIN (none unknown); token counts; input and output messages on the LLM spans
and the root's input/output; ERROR only on the failed tool, not on the denied one, and an OK
root. Exit status 0 when every check passes; each check is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from gateway.scripted import ScriptedServer  # noqa: E402

PHOENIX_PACKAGE = "arize-phoenix"
PROJECT = "agent-gateway-interop"
DEFAULT_VENV = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / (
    "agent-gateway/interop/phoenix-venv"
)
POLICY = """\
version: 1
name: interop
permissions:
  allow:
    - Bash(echo:*)
    - Bash(ls:*)
rules:
  - id: no-rm
    reason: Deleting is for humans.
    tool: Bash
    command: "rm:*"
"""
SCENARIO = {
    "responses": [
        {
            "when": "prompt",
            "text": "Listing first.",
            "usage": {"input_tokens": 1201, "output_tokens": 41},
            "tool_use": [{"name": "Bash", "input": {"command": "echo listed"}}],
        },
        {
            "when": "tool_result",
            "times": 1,
            "text": "Now cleaning.",
            "usage": {"input_tokens": 1302, "output_tokens": 42},
            "tool_use": [{"name": "Bash", "input": {"command": "rm -rf build"}}],
        },
        {
            "when": "tool_result",
            "times": 1,
            "text": "This one fails.",
            "usage": {"input_tokens": 1403, "output_tokens": 43},
            "tool_use": [{"name": "Bash", "input": {"command": "ls /no/such/dir"}}],
        },
        {
            "when": "tool_result",
            "text": "Listed; the delete was denied; the ls failed.",
            "usage": {"input_tokens": 1504, "output_tokens": 44},
        },
    ]
}
QUERY = textwrap.dedent(
    """
    import json, sys
    from phoenix.client import Client
    client = Client(base_url=sys.argv[1])
    projects = [p["name"] for p in client.projects.list()]
    spans = client.spans.get_spans(project_identifier=sys.argv[2], limit=500) \\
        if sys.argv[2] in projects else []
    print(json.dumps({"projects": projects, "spans": spans}, default=str))
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_phoenix(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not (venv / "bin" / "phoenix").exists():
        print(f"installing {PHOENIX_PACKAGE} into {venv} (first run only)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PHOENIX_PACKAGE], check=True)
    version = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('arize-phoenix'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"arize-phoenix {version} in {venv}")
    return python


def start_phoenix(venv: Path, workdir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    handle = log.open("wb")
    proc = subprocess.Popen(
        [str(venv / "bin" / "phoenix"), "serve"], env=env, stdout=handle, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"phoenix exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit(f"phoenix did not start within 120 s; see {log}")


def run_traced(phoenix_url: str, workdir: Path) -> dict[str, Any]:
    home, cwd, gateway_home = workdir / "home", workdir / "project", workdir / "gateway-home"
    for d in (home, cwd, gateway_home):
        d.mkdir(parents=True, exist_ok=True)
    policy = workdir / "policy.yaml"
    policy.write_text(POLICY)
    with ScriptedServer(SCENARIO) as server:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "OTEL_", "TRACE"))
        }
        env.update(
            HOME=str(home),
            ANTHROPIC_API_KEY="scripted",
            ANTHROPIC_BASE_URL=server.url,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            AGENT_GATEWAY_HOME=str(gateway_home),
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
            OTEL_EXPORTER_OTLP_ENDPOINT=phoenix_url,
            OTEL_RESOURCE_ATTRIBUTES=f"openinference.project.name={PROJECT}",
            OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
            PYTHONPATH=str(ROOT),
        )
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "gateway",
                "run",
                "clean up the build",
                "--policy",
                str(policy),
                "--allowed-tools",
                "Bash",
                "--output-format",
                "stream-json",
            ],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    results = [
        json.loads(line)
        for line in out.stdout.splitlines()
        if line.startswith("{") and '"type": "result"' in line.replace('":"', '": "')
    ]
    if not results:
        raise SystemExit(f"the run produced no result: {out.stderr[-2000:]}")
    return dict(results[-1])


def query(python: Path, phoenix_url: str, session: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(
            [str(python), "-c", QUERY, phoenix_url, PROJECT],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise SystemExit(f"phoenix client failed: {done.stderr[-2000:]}")
        spans = [
            s
            for s in json.loads(done.stdout)["spans"]
            if _attr(s, "session.id") == session or _attr(s, "gen_ai.conversation.id") == session
        ]
        roots = [s for s in spans if not s.get("parent_id")]
        if (roots and len(spans) >= 10) or time.monotonic() > deadline:
            return spans
        time.sleep(1)


def _attr(span: dict[str, Any], key: str) -> Any:
    """An attribute, whether Phoenix returned it flat (`a.b`) or nested ({"a": {"b": ...}})."""
    attributes = span.get("attributes") or {}
    if key in attributes:
        return attributes[key]
    node: Any = attributes
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _messages(span: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Phoenix's flattened OpenInference messages (`llm.input_messages.0.message.role`, ...)
    as one dict per message."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in (span.get("attributes") or {}).items():
        if key.startswith(prefix + "."):
            index, _, rest = key[len(prefix) + 1 :].partition(".")
            found.setdefault(int(index), {})[rest] = value
    return [found[i] for i in sorted(found)]


def check(spans: list[dict[str, Any]], result: dict[str, Any]) -> list[tuple[str, bool, str]]:
    checks: list[tuple[str, bool, str]] = []

    def expect(name: str, ok: bool, detail: str = "") -> None:
        checks.append((name, bool(ok), detail))

    kinds = {s["name"]: s.get("span_kind") for s in spans}
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_kind.setdefault(str(s.get("span_kind")), []).append(s)
    expect(
        "spans arrived in the project named by openinference.project.name",
        bool(spans),
        f"{len(spans)} spans",
    )
    expect(
        "no span kind is unknown",
        all(k not in (None, "UNKNOWN", "unknown") for k in kinds.values()),
        json.dumps(kinds),
    )
    root = next((s for s in spans if not s.get("parent_id")), None)
    expect(
        "root is an AGENT span",
        root is not None and root.get("span_kind") == "AGENT",
        str(root and root.get("span_kind")),
    )
    expect(
        "chat spans are LLM spans",
        len(by_kind.get("LLM", [])) == 4,
        f"{len(by_kind.get('LLM', []))} LLM spans",
    )
    expect("tool spans are TOOL spans", len(by_kind.get("TOOL", [])) == 3)
    expect(
        "turn spans are CHAIN spans",
        [s["name"] for s in by_kind.get("CHAIN", [])].count("turn") == 4,
    )
    llm = by_kind.get("LLM", [])
    prompts = sorted(int(_attr(s, "llm.token_count.prompt") or 0) for s in llm)
    completions = sorted(int(_attr(s, "llm.token_count.completion") or 0) for s in llm)
    expect(
        "token counts",
        prompts == [1201, 1302, 1403, 1504] and completions == [41, 42, 43, 44],
        f"prompt {prompts}, completion {completions}",
    )
    # Behind serve a request also carries the system prompt and Claude Code's system messages
    # (Phoenix shows them as system messages); the conversation is the rest.
    inputs = [
        [m for m in _messages(s, "llm.input_messages") if m.get("message.role") != "system"]
        for s in llm
    ]
    outputs = [_messages(s, "llm.output_messages") for s in llm]
    expect(
        "input messages on every LLM span (the conversation so far)",
        sorted(len(m) for m in inputs) == [1, 3, 5, 7],
        json.dumps(inputs)[:300],
    )
    expect(
        "output messages on every LLM span",
        all(m and m[0].get("message.role") == "assistant" for m in outputs),
        json.dumps(outputs)[:300],
    )
    expect(
        "tool calls in the output messages",
        sum(any("message.tool_calls.0.tool_call.function.name" in x for x in m) for m in outputs)
        == 3,
    )
    expect(
        "root input.value is the prompt",
        root is not None and _attr(root, "input.value") == "clean up the build",
        str(root and _attr(root, "input.value")),
    )
    expect(
        "root output.value is the answer",
        root is not None and _attr(root, "output.value") == result.get("result"),
        str(root and _attr(root, "output.value")),
    )
    tools = {str(_attr(s, "gen_ai.tool.call.arguments") or ""): s for s in by_kind.get("TOOL", [])}
    denied = next((s for a, s in tools.items() if "rm -rf" in a), None)
    failed = next((s for a, s in tools.items() if "/no/such/dir" in a), None)
    expect(
        "the denied tool is not an error",
        denied is not None and denied.get("status_code") != "ERROR",
        str(denied and denied.get("status_code")),
    )
    expect(
        "the failed tool is an error",
        failed is not None and failed.get("status_code") == "ERROR",
        str(failed and failed.get("status_code")),
    )
    expect(
        "the root is OK",
        root is not None and root.get("status_code") == "OK",
        str(root and root.get("status_code")),
    )
    expect(
        "the deny is an event on its span",
        denied is not None
        and any(e.get("name") == "agent_gateway.policy.deny" for e in denied.get("events") or []),
    )
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="Phoenix's virtualenv")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    args = parser.parse_args()
    python = ensure_phoenix(args.venv)
    workdir = Path(tempfile.mkdtemp(prefix="agent-gateway-phoenix-"))
    proc, url = start_phoenix(args.venv, workdir / "phoenix", workdir / "phoenix.log")
    try:
        print(f"phoenix at {url}; tracing a run into project {PROJECT}", flush=True)
        result = run_traced(url, workdir)
        spans = query(python, url, str(result["session_id"]))
        (workdir / "spans.json").write_text(json.dumps(spans, indent=1, default=str))
        checks = check(spans, result)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"kept {workdir}")
    for name, ok, detail in checks:
        print(
            f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail and not ok else "")
        )
    failed = sum(not ok for _, ok, _ in checks)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
