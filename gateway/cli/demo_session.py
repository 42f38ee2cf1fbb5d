"""`agent-gateway demo`: the real agent loop against a scripted model, shown turn by turn."""

from __future__ import annotations

import asyncio
import io
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from gateway.env import keep_local_span_file, set_gateway_home
from gateway.runner.options import RunOptions
from gateway.runner.run import RunRequest, execute
from gateway.scripted import ScriptedServer
from gateway.telemetry.show import trace_show

SCENARIO: dict[str, Any] = {
    "responses": [
        {
            "when": "prompt",
            "text": "I'll write the release notes first.",
            "tool_use": [
                {
                    "name": "Write",
                    "input": {
                        "file_path": "NOTES.md",
                        "content": "# Release notes\n- faster hooks\n",
                    },
                }
            ],
            "usage": {"input_tokens": 2100, "output_tokens": 64, "cache_read_input_tokens": 900},
        },
        {
            "when": "tool_result",
            "text": "Now let me check what landed.",
            "tool_use": [{"name": "Bash", "input": {"command": "wc -l NOTES.md && cat NOTES.md"}}],
            "usage": {"input_tokens": 2300, "output_tokens": 48, "cache_read_input_tokens": 900},
        },
        {
            "when": "tool_result",
            "text": "Now I'll clean up.",
            "tool_use": [{"name": "Bash", "input": {"command": "cd . && rm -fr NOTES.md"}}],
            "usage": {"input_tokens": 2450, "output_tokens": 37, "cache_read_input_tokens": 900},
        },
        {
            "when": "tool_result",
            "text": "The policy blocked the delete, so NOTES.md stays: a heading and one entry.",
            "usage": {"input_tokens": 2600, "output_tokens": 31, "cache_read_input_tokens": 900},
        },
    ]
}
PROMPT = "Write release notes to NOTES.md, show me the file, then clean up."
DEMO_POLICY = """\
version: 1
name: demo
permissions:
  deny:
    - Bash(rm -rf:*)
  allow:
    - Write
    - Bash(wc:*)
    - Bash(cat:*)
"""


class DemoView:
    """Draws the loop from the raw message stream: turns, tool calls, results, cost."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.turn = 0
        self._seen_messages: set[str] = set()

    def __call__(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "assistant":
            self._assistant(message["message"])
        elif kind == "user":
            for block in _blocks(message.get("message", {})):
                if block.get("type") == "tool_result":
                    status = "[red]error[/]" if block.get("is_error") else "[green]ok[/]"
                    self.console.print(
                        f"    [dim]tool result[/] {status}: {_short(block.get('content'))}"
                    )
        elif kind == "result":
            cost = message.get("total_cost_usd") or 0.0
            usage = message.get("usage") or {}
            self.console.rule(f"result: [bold]{message.get('subtype')}[/]")
            self.console.print(
                f"turns {message.get('num_turns')}  ·  input tokens {usage.get('input_tokens', 0)}"
                f"  ·  output tokens {usage.get('output_tokens', 0)}  ·  cost ${cost:.5f}"
                f"  ·  {message.get('duration_ms')} ms"
            )

    def _assistant(self, body: dict[str, Any]) -> None:
        if body.get("id") not in self._seen_messages:
            self._seen_messages.add(str(body.get("id")))
            self.turn += 1
            self.console.print(f"\n[bold cyan]turn {self.turn}[/] [dim]({body.get('model')})[/]")
        for block in _blocks(body):
            if block.get("type") == "text":
                self.console.print(f"  [bold]model:[/] {block['text']}")
            elif block.get("type") == "tool_use":
                self.console.print(
                    f"  [yellow]tool call[/] {block['name']} {_short(block.get('input'))}"
                )


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    content = body.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _short(value: Any, limit: int = 90) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_demo(*, keep: bool = False) -> int:
    console = Console(highlight=False)
    workspace = Path(tempfile.mkdtemp(prefix="agent-gateway-demo-"))
    (workspace / "project").mkdir()
    (workspace / "home").mkdir()
    console.print(
        "[bold]agent-gateway demo[/]: the real Claude Code agent loop, with the model "
        "[bold]scripted[/] by a local fake Messages API (no API key, no network)."
    )
    try:
        with ScriptedServer(SCENARIO) as server:
            env = {
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "scripted-demo",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "HOME": str(workspace / "home"),
            }
            # The demo keeps its audit log, archive and spans in its own workspace, and a
            # local copy of the spans even when an exporter is configured: its last step
            # draws the trace from it.
            set_gateway_home(workspace / "gateway-home")
            keep_local_span_file()
            policy = workspace / "demo-policy.yaml"
            policy.write_text(DEMO_POLICY)
            console.print(f"scripted model at {server.url}; workspace {workspace / 'project'}")
            console.print(f"[bold]prompt:[/] {PROMPT}")
            console.print(f"[bold]policy:[/] {policy} (denies recursive rm)")
            request = RunRequest(
                prompt=PROMPT,
                options=RunOptions(cwd=str(workspace / "project"), env=env),
                policy_paths=[str(policy)],
            )
            status = asyncio.run(execute(request, io.StringIO(), sys.stderr, [DemoView(console)]))
        notes = workspace / "project" / "NOTES.md"
        if notes.exists():
            console.print(f"\nthe agent's file on disk, {notes}:\n{notes.read_text()}")
        console.print("[bold]the run's trace[/] (agent-gateway trace show):")
        trace_show(None, home=workspace / "gateway-home", console=console)
        return status
    finally:
        if keep:
            console.print(f"workspace kept at {workspace}")
        else:
            shutil.rmtree(workspace, ignore_errors=True)
