"""`agent-gateway run` starts Claude Code without claude_agent_sdk (about a second of imports,
most of it the `mcp` types); `gateway.query` keeps it."""

from __future__ import annotations

import subprocess
import sys

RUN_PATH = ("gateway.cli.main, gateway.cli.run, gateway.runner.run, gateway.runner.claude_cli, "
            "gateway.runner.hook_endpoint, gateway.runner.wiring, gateway.server.runs")


def loaded(modules: str) -> list[str]:
    probe = (f"import sys, {modules}; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'claude_agent_sdk', 'mcp'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    return list(eval(out.stdout))  # a printed list of names


def test_the_run_path_never_imports_the_sdk() -> None:
    assert loaded(RUN_PATH) == []


def test_gateway_query_still_runs_on_the_sdk() -> None:
    assert "claude_agent_sdk" in loaded("gateway.runner.query")
