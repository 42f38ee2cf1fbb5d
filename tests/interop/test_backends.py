"""What a real backend shows: a session through `run` and one behind `serve`, traced into Arize
Phoenix and into MLflow, and read back through each one's own client.

Neither is a dependency of the gateway: each lives in its own virtualenv,
AGENT_GATEWAY_PHOENIX_VENV (default: the one `tests/interop/phoenix/check_phoenix.py` installs,
~/.cache/agent-gateway/interop/phoenix-venv) and AGENT_GATEWAY_MLFLOW_VENV (default
~/.cache/agent-gateway/interop/mlflow-venv, made with `python -m venv DIR && DIR/bin/pip
install mlflow`). Without one, its test is skipped and says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.server.claude_settings import gateway_settings
from tests.e2e.harness import Sandbox, claude_run, gateway_run
from tests.interop.phoenix import check_phoenix as phoenix
from tests.interop.test_run_and_serve import QUIET
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
VENV = Path(os.environ.get("AGENT_GATEWAY_PHOENIX_VENV") or phoenix.DEFAULT_VENV)
MLFLOW_VENV = Path(
    os.environ.get("AGENT_GATEWAY_MLFLOW_VENV") or phoenix.DEFAULT_VENV.parent / "mlflow-venv"
)


@pytest.fixture(scope="module")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (VENV / "bin" / "phoenix").exists():
        pytest.skip(
            f"arize-phoenix is not installed in {VENV}: `python tests/interop/phoenix/"
            "check_phoenix.py` installs it from PyPI (or set AGENT_GATEWAY_PHOENIX_VENV)"
        )
    workdir = tmp_path_factory.mktemp("phoenix")
    proc, url = phoenix.start_phoenix(VENV, workdir / "data", workdir / "phoenix.log")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def env_for(sandbox: Sandbox, url: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,  # all the docs ask for, with the project
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={phoenix.PROJECT}",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }


def shown(url: str, session: str) -> list[dict[str, Any]]:
    return phoenix.query(VENV / "bin" / "python", url, session)


def check(spans: list[dict[str, Any]], result: dict[str, Any]) -> None:
    failed = [(name, detail) for name, ok, detail in phoenix.check(spans, result) if not ok]
    assert not failed, failed
    attr = phoenix._attr
    llm = [s for s in spans if s.get("span_kind") == "LLM"]
    tools = [s for s in spans if s.get("span_kind") == "TOOL"]
    # the input and output columns of LLM and TOOL spans
    assert all(json.loads(attr(s, "input.value")) and attr(s, "output.value") for s in llm)
    assert all(attr(s, "input.value") for s in tools)
    results = sorted(str(attr(s, "output.value")) for s in tools if attr(s, "output.value"))
    assert results == ["listed"], results
    # the cost Phoenix shows adds up to Claude Code's
    costs = sum(float(attr(s, "gen_ai.usage.cost") or 0) for s in llm)
    assert costs == pytest.approx(result["total_cost_usd"], abs=1e-6)


PROMPT = "clean up the build"


def both_ways(
    sandbox: Sandbox, scripted: Any, otel: dict[str, str], see: Callable[[Any], None]
) -> None:
    """The Phoenix check's session through `run`, then behind `serve`; `see(outcome)` each."""
    policy = sandbox.home / "policy.yaml"
    policy.write_text(phoenix.POLICY)
    scripted(phoenix.SCENARIO)
    env = sandbox.env(**otel)
    del env["OTEL_TRACES_EXPORTER"]
    out = gateway_run(sandbox, PROMPT, "--policy", str(policy), "--allowed-tools", "Bash", env=env)
    assert out.results, out.stderr[-2000:]
    assert not QUIET.search(out.stderr), out.stderr
    see(out)

    upstream = scripted(phoenix.SCENARIO)
    serve_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    serve_env.update(
        AGENT_GATEWAY_HOME=str(sandbox.gateway_home),
        AGENT_GATEWAY_CLAUDE_PROJECTS=str(sandbox.projects_root),
        **otel,
    )
    serve_env.pop("AGENT_GATEWAY_TOKEN", None)
    with ServeProcess([str(policy)], upstream.url, serve_env, log=sandbox.home / "serve.log") as gw:
        settings = gateway_settings(gw.url, with_token=False)
        served = claude_run(
            sandbox, PROMPT, "--settings", json.dumps(settings), "--allowedTools", "Bash"
        )
        assert served.results, served.stderr[-2000:]
    said = (sandbox.home / "serve.log").read_text()
    assert not QUIET.search(said), said
    see(served)


def test_phoenix_shows_the_same_session_from_run_and_from_serve(
    phoenix_url: str, sandbox: Sandbox, scripted: Any
) -> None:
    both_ways(
        sandbox, scripted, env_for(sandbox, phoenix_url),
        lambda out: check(shown(phoenix_url, out.session_id), out.result),
    )


# --- MLflow ----------------------------------------------------------------------------------
MLFLOW_QUERY = textwrap.dedent(
    """
    import json, sys, mlflow
    mlflow.set_tracking_uri(sys.argv[1])
    found = []
    for t in mlflow.search_traces(locations=["0"], return_type="list"):
        info = t.info.to_dict()
        if info.get("trace_metadata", {}).get("mlflow.trace.session") != sys.argv[2]:
            continue
        spans = [{"name": s.name, "type": s.span_type, "status": s.status.status_code.value,
                  "parent": s.parent_id, "inputs": s.inputs, "outputs": s.outputs}
                 for s in t.data.spans]
        found.append({"info": info, "spans": spans})
    print(json.dumps(found, default=str))
    """
)


@pytest.fixture(scope="module")
def mlflow_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (MLFLOW_VENV / "bin" / "mlflow").exists():
        pytest.skip(
            f"mlflow is not installed in {MLFLOW_VENV}: `python -m venv {MLFLOW_VENV} && "
            f"{MLFLOW_VENV}/bin/pip install mlflow` (or set AGENT_GATEWAY_MLFLOW_VENV)"
        )
    workdir = tmp_path_factory.mktemp("mlflow")
    port = phoenix.free_port()
    log = (workdir / "mlflow.log").open("wb")
    proc = subprocess.Popen(
        [str(MLFLOW_VENV / "bin" / "mlflow"), "server", "--host", "127.0.0.1", "--port",
         str(port), "--backend-store-uri", f"sqlite:///{workdir / 'mlflow.db'}",
         "--default-artifact-root", str(workdir / "artifacts")],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"mlflow server did not start: {(workdir / 'mlflow.log')}")
                time.sleep(0.5)
        # Its first OTLP request loads the server's trace ingestion (seconds on a busy machine):
        # an empty one first, so the session's first batch is not the one that waits for it.
        warm = urllib.request.Request(
            url + "/v1/traces", data=b"", method="POST",
            headers={"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": "0"},
        )
        with contextlib.suppress(urllib.error.HTTPError):  # an answer (400: empty) will do
            urllib.request.urlopen(warm, timeout=120).close()
        yield url
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


def mlflow_trace(url: str, session: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(
            [str(MLFLOW_VENV / "bin" / "python"), "-c", MLFLOW_QUERY, url, session],
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        found = json.loads(done.stdout)
        if (found and len(found[0]["spans"]) >= 12) or time.monotonic() > deadline:
            assert len(found) == 1, found
            return dict(found[0])
        time.sleep(1)


def check_mlflow(trace: dict[str, Any], result: dict[str, Any]) -> None:
    info, spans = trace["info"], trace["spans"]
    assert info["state"] == "OK"
    assert json.loads(info["request_preview"]) == PROMPT
    assert json.loads(info["response_preview"]) == result["result"]
    kinds = sorted(s["type"] for s in spans)
    assert kinds == ["AGENT"] + ["CHAIN"] * 4 + ["LLM"] * 4 + ["TOOL"] * 3, kinds
    usage = json.loads(info["trace_metadata"]["mlflow.trace.tokenUsage"])
    assert (usage["input_tokens"], usage["output_tokens"]) == (5410, 170)
    cost = info["trace_metadata"].get("mlflow.trace.cost")
    if cost is not None:  # MLflow prices from its own table, when it knows the model
        assert json.loads(cost)["total_cost"] == pytest.approx(result["total_cost_usd"], 1e-6)
    tools = {s["inputs"]["command"]: s for s in spans if s["type"] == "TOOL"}
    assert tools["echo listed"]["outputs"] == "listed"
    assert tools["rm -rf build"]["outputs"] is None and tools["rm -rf build"]["status"] == "UNSET"
    assert tools["ls /no/such/dir"]["status"] == "ERROR"
    for llm in (s for s in spans if s["type"] == "LLM"):
        assert llm["inputs"] and llm["outputs"][0]["role"] == "assistant"


def test_mlflow_shows_the_same_session_from_run_and_from_serve(
    mlflow_url: str, sandbox: Sandbox, scripted: Any
) -> None:
    otel = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": mlflow_url,
        "OTEL_EXPORTER_OTLP_HEADERS": "x-mlflow-experiment-id=0",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    both_ways(sandbox, scripted, otel,
              lambda out: check_mlflow(mlflow_trace(mlflow_url, out.session_id), out.result))
