"""What the command hook process loads (one process per tool call, so every import is paid
per call): the entry point `agent-gateway hook pre-tool-use` with a cached policy loads the
decision's modules and nothing a decision does not need; the analysers that are left out load
when a command needs them, and the decision is the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)', 'Bash(git push:*)']\n"
# The real entry point (console script `agent-gateway`), with an exit handler that lists
# every module the process loaded; the hook runs its exit handlers before it ends.
RUN = ("import atexit, sys; from gateway.cli.main import main; "
       "atexit.register(lambda: open(sys.argv[1], 'w').write('\\n'.join(sorted(sys.modules)))); "
       "main(['hook', 'pre-tool-use', '--policy', sys.argv[2]])")
NEVER = [
    # other commands' modules and what they import
    "claude_agent_sdk", "aiohttp", "rich", "gateway.cli.run", "gateway.cli.serve",
    "gateway.cli.archive", "gateway.server", "gateway.runner",
    # OpenTelemetry only when OTEL_LOGS_EXPORTER asks for the decision's log record
    "opentelemetry",
    # the validating loader: a cache hit needs neither pydantic nor yaml
    "pydantic", "yaml", "gateway.policy.loader",
    # the standard library's slow imports a decision does not use
    "logging", "configparser", "tempfile", "importlib.resources", "tree_sitter_bash", "shlex",
    # the interpreter grammars' packages: only their compiled binding, and only when needed
    "tree_sitter_javascript", "tree_sitter_ruby", "tree_sitter_perl", "tree_sitter_php",
    "tree_sitter_lua",
    # the arguments settings files write are read without building a parser
    "argparse",
]
ON_DEMAND = [
    "gateway.policy.shell.interp.invocation", "gateway.policy.shell.interp.effects",
    "gateway.policy.shell.awk", "gateway.policy.shell.sed", "gateway.policy.shell.gitcmd",
    "gateway.policy.shell.interp.parsing", "gateway.policy.shell.interp.javascript",
    "gateway.policy.shell.interp.ruby", "gateway.policy.shell.interp.perl",
    "gateway.policy.shell.interp.php", "gateway.policy.shell.interp.lua",
]


def _hook(tmp_path: Path, command: str) -> tuple[dict[str, object], set[str]]:
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    listing = tmp_path / "modules.txt"
    stdin = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_input": {"command": command}, "session_id": "s1",
                        "tool_use_id": "t1", "cwd": str(tmp_path)})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
           "AGENT_GATEWAY_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-c", RUN, str(listing), str(policy)], input=stdin,
                          text=True, capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout), set(listing.read_text().split())


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def _decision(output: dict[str, object]) -> object:
    specific = output.get("hookSpecificOutput")
    return specific.get("permissionDecision") if isinstance(specific, dict) else None


def test_a_cached_decision_loads_only_what_it_needs(tmp_path: Path) -> None:
    _hook(tmp_path, "ls")  # compiles the policy into the cache (the loader is loaded here)
    output, modules = _hook(tmp_path, "cd src && ls -la | grep foo; echo done")
    assert output == {}  # no rule speaks: the hook abstains
    assert "gateway.policy.shell.scan" in modules  # the Bash scanner did run
    # The grammar's extension is what the scanner needs; tree-sitter-bash before 0.24 (single-
    # phase init) registers it in sys.modules as it loads, without running the package.
    loaded = modules - {"tree_sitter_bash._binding"}
    assert [name for name in NEVER if _loaded(loaded, name)] == []
    assert [name for name in ON_DEMAND if name in modules] == []
    records = (tmp_path / "home" / "audit.jsonl").read_text().splitlines()
    assert len(records) == 2 and json.loads(records[-1])["decision"] == "abstain"


@pytest.mark.parametrize(("command", "needs"), [
    ("python3 -c 'import os; os.system(\"rm -rf /\")'", "gateway.policy.shell.interp.invocation"),
    ("awk 'BEGIN { system(\"rm -rf /\") }'", "gateway.policy.shell.awk"),
    ("sed -n '1e rm -rf /' notes.txt", "gateway.policy.shell.sed"),
    ("git -c alias.p='push --force' p", "gateway.policy.shell.gitcmd"),
    ("node -e \"require('child_process').execSync('rm -rf /')\"",
     "gateway.policy.shell.interp.javascript"),
    ("ruby -e 'system(\"rm -rf /\")'", "gateway.policy.shell.interp.ruby"),
    ("perl -e 'system(\"rm -rf /\")'", "gateway.policy.shell.interp.perl"),
    ("php -r 'system(\"rm -rf /\");'", "gateway.policy.shell.interp.php"),
    ("lua -e 'os.execute(\"rm -rf /\")'", "gateway.policy.shell.interp.lua"),
])
def test_an_analyser_loads_when_a_command_needs_it(tmp_path: Path, command: str,
                                                   needs: str) -> None:
    _hook(tmp_path, "ls")
    output, modules = _hook(tmp_path, command)
    assert needs in modules
    assert _decision(output) == "deny", output
    # A grammar is its compiled binding alone: the package's __init__ (highlight queries
    # through importlib.resources) does not run, and no other language's grammar loads.
    grammars = {m for m in modules if m.startswith("tree_sitter_") and m != "tree_sitter_bash"
                and not m.startswith("tree_sitter_bash.")}
    assert all(m.endswith("._binding") for m in grammars), grammars
    assert len(grammars) <= 1, grammars
    assert "importlib.resources" not in modules
