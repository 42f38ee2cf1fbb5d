"""`/`-anchored rules and the built-in protections resolve against the directory the session
started in, whatever the agent has `cd`-ed into since: Claude Code's next hook input then
reports a `cwd` inside the project (.github, .git, src), and the hook alone must hold."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gateway.policy import Policy, decide, load_policy
from gateway.policy.builtin import Protected
from gateway.policy.session_dir import encoded, session_directory
from gateway.types import ToolCall

POLICY = """version: 1
default: allow
permissions:
  allow: [Bash, Edit, Write, Read]
  deny: ['Edit(/.github/workflows/**)']
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "my_app.v2"
    for sub in (".github/workflows", ".git", "src", ".claude"):
        (root / sub).mkdir(parents=True)
    (root / ".github/workflows/ci.yml").write_text("on: push\n")
    (root / ".git/config").write_text("[core]\n")
    return root


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    org = tmp_path / "org.yaml"
    org.write_text(POLICY)
    return load_policy([str(org)], Protected(str(tmp_path / "gw")))


def _transcript(home: Path, root: Path) -> str:
    return str(home / ".claude/projects" / encoded(str(root)) / "0b3f.jsonl")


def _call(command: str, cwd: Path, root: Path, **kw: str) -> ToolCall:
    return ToolCall("Bash", {"command": command}, cwd=str(cwd),
                    transcript_path=_transcript(Path("/home/dev"), root), **kw)


@pytest.mark.parametrize(("sub", "command", "rule"), [
    (".github", "echo x >> workflows/ci.yml", "Edit(/.github/workflows/**)"),
    (".github/workflows", "echo x > ci.yml", "Edit(/.github/workflows/**)"),
    (".github", "cp /dev/null workflows/pwn.yml", "Edit(/.github/workflows/**)"),
    ("src", "echo '{}' > ../.mcp.json", "builtin:session-startup"),
    ("src", "echo '{}' > ../.claude/settings.json", "builtin:claude-settings"),
    (".git", "echo '[core] fsmonitor = x' >> config", "builtin:git-code"),
])
def test_writes_after_a_cd_are_held_by_the_hook_alone(
        project: Path, policy: Policy, sub: str, command: str, rule: str) -> None:
    # the attack, in a real bash: the write lands on the guarded file
    scratch = project.parent / "scratch"
    subprocess.run(["cp", "-r", str(project), str(scratch)], check=True)
    subprocess.run(["bash", "-c", command], cwd=scratch / sub, check=True)
    decision = decide(policy, _call(command, project / sub, project))
    assert decision.kind == "deny", decision
    assert rule in (decision.rule_id, decision.reason) or rule in decision.reason, decision


def test_ordinary_writes_after_a_cd_still_run(project: Path, policy: Policy) -> None:
    for sub, command in (("src", "echo x > main.py"), (".github", "echo x > README.md"),
                         (".github", "cat workflows/ci.yml")):
        assert decide(policy, _call(command, project / sub, project)).kind == "allow"


def test_the_start_directory_is_read_from_the_transcript_path(project: Path) -> None:
    transcript = _transcript(Path("/h"), project)
    assert session_directory(str(project / "src/deep"), transcript, {}) == str(project)
    assert session_directory(str(project), transcript, {}) == str(project)
    # nothing names it: the cwd stands for it
    assert session_directory(str(project / "src"), "", {}) == str(project / "src")
    assert session_directory("/elsewhere", transcript, {}) == "/elsewhere"
    # a command hook is told it
    assert session_directory("/x/y", "", {"CLAUDE_PROJECT_DIR": "/x"}) == "/x"


def test_a_truncated_folder_name_stands_for_an_ancestor(tmp_path: Path) -> None:
    """Past 200 characters Claude Code cuts the name and adds a hash of the whole: the
    shallowest directory whose name begins so is taken (the hash is not recomputed)."""
    root = "/srv/" + "/".join(["component-with-a-long-name"] * 12)
    folder = encoded(root)[:200] + "-1kq0z3"
    found = session_directory(root + "/src", f"/h/.claude/projects/{folder}/s.jsonl", {})
    assert (root + "/src").startswith(found + "/") and len(encoded(found)) > 200
