"""A command hook that overruns is a hook that allowed: with the real Claude Code, a
PreToolUse command hook whose decision would take longer than the hook's timeout must block
the tool (`rm -rf victim` does not run) and the audit log must record the deny.

Measured on Claude Code 2.1.332: a command hook that overran its `timeout`, or was killed,
let the tool run ("A hook didn't answer in time, so it didn't check this action"); the
handler the gateway's settings write (`command_hook_handler`: its timeout, onFailure: block)
blocks then, and the hook itself answers well inside the timeout, with a recorded deny."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.server.claude_settings import command_hook_handler
from tests.e2e.harness import RunOutcome, Sandbox, claude_run

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]

POLICY = """\
version: 1
unparseable: deny
permissions:
  deny: ['Bash(rm -rf:*)', 'Read(**/.env)']
  allow: ['Bash(cat:*)']
"""


def run_and_remove(command: str) -> dict[str, Any]:
    return {"responses": [
        {"when": "prompt", "text": "cleaning",
         "tool_use": [{"name": "Bash", "input": {"command": command}}]},
        {"when": "tool_result", "text": "finished"},
    ]}


def with_command_hook(sandbox: Sandbox, hook: str, prompt: str) -> RunOutcome:
    """The bare Claude Code, Bash allowed by its own settings, the gateway's command hook the
    only thing between the model and the files."""
    settings = sandbox.cwd.parent / "settings.json"
    settings.write_text(json.dumps(
        {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [command_hook_handler(hook)]}]}}))
    return claude_run(sandbox, prompt, "--settings", str(settings), "--allowed-tools", "Bash",
                      timeout=300)


def hook_command(policy: Path, inject: str = "") -> str:
    """`agent-gateway hook pre-tool-use --policy P` (from this checkout), with `inject` run
    first in the hook process when given (test-only code, never an environment switch)."""
    if not inject:
        return shlex.join([sys.executable, "-m", "gateway", "hook", "pre-tool-use",
                           "--policy", str(policy)])
    code = inject + ("\nfrom gateway.cli.main import main\n"
                     f"main(['hook', 'pre-tool-use', '--policy', {str(policy)!r}])\n")
    return shlex.join([sys.executable, "-c", code])


def audit_records(sandbox: Sandbox) -> list[dict[str, Any]]:
    log = sandbox.gateway_home / "audit.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def write_policy(sandbox: Sandbox) -> Path:
    path = sandbox.cwd.parent / "policy.yaml"
    path.write_text(POLICY)
    return path


def pnpm_tree(project: Path, packages: int) -> Path:
    """node_modules as pnpm lays it out: each package's files hard links into a store, in
    a directory of their own (about 6 entries per package). Returns one linked file."""
    store = project / ".pnpm-store"
    store.mkdir()
    for n in range(packages):
        lib = project / "node_modules" / ".pnpm" / f"pkg{n}@1.0.0" / "node_modules" / \
            f"pkg{n}" / "lib"
        lib.mkdir(parents=True)
        (store / f"f{n}").write_text("module.exports = 1\n")
        os.link(store / f"f{n}", lib / "index.js")
    return Path("node_modules/.pnpm/pkg1@1.0.0/node_modules/pkg1/lib/index.js")


def test_a_real_slow_input_is_decided_and_recorded_before_the_timeout(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    """400 spellings of one hard-linked file in a pnpm tree of 24,000 entries: each spelling
    walked the tree again (about 90 ms each here, 37 s for the call, past the hook's 30 s
    timeout, so `rm -rf victim` ran); one walk now serves them all, within the decision's
    budget."""
    linked = pnpm_tree(sandbox.cwd, 4000)
    (sandbox.cwd / "victim").mkdir()
    spellings = " ".join("./" * (i % 7) + str(linked).replace(
        "node_modules/", "node_modules/" + "./" * (i // 7), 1) for i in range(400))
    scripted(run_and_remove(f"cat {spellings} > /dev/null; rm -rf victim"))
    out = with_command_hook(sandbox, hook_command(write_policy(sandbox)), "clean up")

    assert (sandbox.cwd / "victim").is_dir()
    (denied,) = out.tool_results()
    assert denied["is_error"] is True
    (record,) = audit_records(sandbox)
    assert record["decision"] == "deny" and record["tool"] == "Bash"


SLOW_DECISION = (
    "import time\nimport gateway.handlers.decision as d\n"
    "def slow(*a, **k):\n    time.sleep(120)\n"
    "d.decide = slow\n"
)
SLOW_AUDIT_APPEND = (
    # The append of the decision's record is slow beyond the grace, the audit log's lock
    # held: the hook blocks without recording (it cannot know whether the slow write lands).
    "import time\nimport gateway.audit.log as log\n"
    "write = log._write_whole\n"
    "def slow(*a, **k):\n    time.sleep(120)\n    write(*a, **k)\n"
    "log._write_whole = slow\n"
)


def test_a_decision_slower_than_the_timeout_is_a_recorded_deny(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    """The alarm, not a cooperative budget: the decision sleeps past the hook's timeout and
    the hook still denies at its deadline, records the deny, and exits 2."""
    (sandbox.cwd / "victim").mkdir()
    scripted(run_and_remove("cat README 2>/dev/null; rm -rf victim"))
    out = with_command_hook(sandbox, hook_command(write_policy(sandbox), SLOW_DECISION), "go")

    assert (sandbox.cwd / "victim").is_dir()
    (denied,) = out.tool_results()
    assert denied["is_error"] is True and "deadline" in str(denied["content"])
    (record,) = audit_records(sandbox)
    assert (record["decision"], record["rule_id"]) == ("deny", "gateway.fail-closed")
    assert "deadline" in record["reason"] and record["input"]["command"].endswith("victim")


def test_a_record_append_slower_than_the_timeout_blocks(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    (sandbox.cwd / "victim").mkdir()
    scripted(run_and_remove("cat README 2>/dev/null; rm -rf victim"))
    out = with_command_hook(sandbox, hook_command(write_policy(sandbox), SLOW_AUDIT_APPEND),
                            "go")

    assert (sandbox.cwd / "victim").is_dir()
    (blocked,) = out.tool_results()
    assert blocked["is_error"] is True and "audit log" in str(blocked["content"])
    assert audit_records(sandbox) == []
