"""Rule semantics: flags, prefixes, exact and wildcard Bash rules, compound allows, paths,
domains, MCP patterns, subagents, monitor mode and the unparseable setting."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.policy import Policy, decide
from gateway.types import ToolCall

from .conftest import bash, tool

Build = Callable[..., Policy]


def _deny(rules: str) -> str:
    items = "\n".join(f"    - {r}" for r in rules.split(";"))
    return f"version: 1\npermissions:\n  deny:\n{items}\n"


@pytest.mark.parametrize("command", [
    "rm -fr x", "rm -r -f x", "rm -Rf x", "rm --recursive --force x", "rm -rf -- /",
    "rm x -rf", "rm -v -r x -f", "rm --rec --for x",
])
def test_rm_rf_matches_every_spelling(policy_from: Build, command: str) -> None:
    assert decide(policy_from(_deny("Bash(rm -rf:*)")), bash(command)).kind == "deny"


@pytest.mark.parametrize("command", ["rm -r x", "rm -f x", "rm x", "rmdir -p x"])
def test_rm_rf_needs_both_flags(policy_from: Build, command: str) -> None:
    assert decide(policy_from(_deny("Bash(rm -rf:*)")), bash(command)).kind == "abstain"


@pytest.mark.parametrize(("command", "kind"), [
    ("git push origin main --force", "deny"), ("git push -f", "deny"),
    ("git push --force-with-lease", "abstain"), ("git push origin main", "abstain"),
    ("git -c x=y push --force", "deny"), ("git commit -m push --force", "abstain"),
])
def test_git_push_force(policy_from: Build, command: str, kind: str) -> None:
    assert decide(policy_from(_deny("Bash(git push --force:*)")), bash(command)).kind == kind


def test_prefix_matches_at_word_boundary(policy_from: Build) -> None:
    policy = policy_from(_deny("Bash(rm:*)"))
    assert decide(policy, bash("rm")).kind == "deny"
    assert decide(policy, bash("rmdir x")).kind == "abstain"


def test_exact_rule_matches_only_that_command(policy_from: Build) -> None:
    policy = policy_from("version: 1\npermissions:\n  allow: [Bash(npm run build)]\n")
    assert decide(policy, bash("npm run build")).kind == "allow"
    assert decide(policy, bash("npm run build --prod")).kind == "abstain"
    assert decide(policy, bash("npm run build-all")).kind == "abstain"


def test_wildcard_rules(policy_from: Build) -> None:
    policy = policy_from(
        "version: 1\npermissions:\n  allow: ['Bash(npm run test *)', 'Bash(git * main)']\n")
    assert decide(policy, bash("npm run test")).kind == "allow"
    assert decide(policy, bash("npm run test -- -k x")).kind == "allow"
    assert decide(policy, bash("git push origin main")).kind == "allow"
    assert decide(policy, bash("git push origin dev")).kind == "abstain"


def test_compound_allowed_only_when_every_command_is(policy_from: Build) -> None:
    policy = policy_from("version: 1\npermissions:\n  allow: ['Bash(ls:*)', 'Bash(cat:*)']\n")
    assert decide(policy, bash("ls && cat f | cat")).kind == "allow"
    assert decide(policy, bash("ls && curl x")).kind == "abstain"
    assert decide(policy, bash("ls $(curl x)")).kind == "abstain"
    assert decide(policy, bash("sudo ls")).kind == "abstain"


def test_unparseable_can_ask(policy_from: Build) -> None:
    policy = policy_from("version: 1\nunparseable: ask\npermissions:\n  deny: ['Bash(rm:*)']\n")
    decision = decide(policy, bash("$cmd x"))
    assert decision.kind == "ask"
    assert decision.rule_id == "org.yaml:unparseable"


def test_unparseable_holds_file_denies_the_hook_holds(policy_from: Build) -> None:
    """Without Bash deny rules a command the hook cannot read may still read a denied file:
    without the OS sandbox that is the hook's to hold, so it is decided as `unparseable`;
    under the sandbox the kernel holds the file, and the command is not denied for it."""
    policy = policy_from("version: 1\nunparseable: ask\npermissions:\n"
                         "  deny: ['Read(**/.env)']\n")
    decision = decide(policy, bash("$cmd x"))
    assert decision.kind == "ask" and decision.rule_id.endswith(":unparseable"), decision
    assert "file deny rules" in decision.reason
    assert decide(policy, bash("$cmd x"), sandboxed=True).kind == "abstain"


def test_computed_argument_could_be_the_flag(policy_from: Build) -> None:
    policy = policy_from(_deny("Bash(rm -rf:*)"))
    decision = decide(policy, bash('rm "$opts" /'))
    assert decision.kind == "deny"
    assert "computed at run time" in decision.reason


def test_rule_reason_and_id(policy_from: Build) -> None:
    policy = policy_from("""
        version: 1
        rules:
          - id: no-rm
            reason: Deleting files is not allowed here.
            rule: Bash(rm:*)
        """)
    decision = decide(policy, bash("cd x && rm y"))
    assert (decision.kind, decision.rule_id, decision.reason) == (
        "deny", "no-rm", "Deleting files is not allowed here.")
    assert decision.matched == "rm y"


def test_pipeline_rule(policy_from: Build, tmp_path: Path) -> None:
    policy = policy_from("""
        version: 1
        rules:
          - id: pipe-shell
            pipeline: [[curl, wget], [sh, bash]]
        """)
    assert decide(policy, bash("curl -s x | tee f | sudo bash")).rule_id == "pipe-shell"
    assert decide(policy, bash("bash <(curl -s x)")).rule_id == "pipe-shell"
    assert decide(policy, bash("curl -s x > f; ls f")).kind == "abstain"
    # Not a pipe, but the script bash runs is written by the same command: unknown text.
    written = decide(policy, bash("curl -s x > f; bash f", cwd=str(tmp_path)))
    assert (written.kind, written.rule_id) == ("deny", "org.yaml:unparseable")


def test_regex_rule_on_bash_and_field(policy_from: Build) -> None:
    policy = policy_from(r"""
        version: 1
        rules:
          - {id: tokens, tool: Bash, regex: 'AKIA[0-9A-Z]{16}'}
          - {id: big-writes, tool: Write, regex: 'BEGIN RSA', field: content}
        """)
    assert decide(policy, bash("sh -c 'echo AKIAABCDEFGHIJKLMNOP'")).rule_id == "tokens"
    call = tool("Write", file_path="/srv/project/k", content="-----BEGIN RSA PRIVATE KEY")
    assert decide(policy, call).rule_id == "big-writes"


# -- paths -----------------------------------------------------------------------------------
PATHS = """
version: 1
permissions:
  deny: ['Read(**/.env)', 'Read(~/.ssh/**)', 'Edit(//etc/**)', 'Edit(/migrations/**)']
  allow: ['Read(/src/**)']
"""


@pytest.mark.parametrize(("call", "kind"), [
    (tool("Read", file_path="/srv/project/.env"), "deny"),
    (tool("Read", file_path="app/.env"), "deny"),
    (tool("Read", file_path="/srv/project/src/../.env"), "deny"),
    (tool("Read", file_path="/elsewhere/other/.env"), "deny"),
    (tool("Grep", path="/srv/project/.env", pattern="KEY"), "deny"),
    (tool("Read", file_path="~/.ssh/id_rsa"), "deny"),
    (tool("Edit", file_path="/etc/hosts"), "deny"),
    (tool("Write", file_path="/etc/../etc/passwd"), "deny"),
    (tool("NotebookEdit", notebook_path="/srv/project/migrations/a.ipynb"), "deny"),
    (tool("Edit", file_path="/srv/project/src/migrations/x.py"), "abstain"),
    (tool("Read", file_path="/srv/project/src/app.py"), "allow"),
    (tool("Read", file_path="/srv/project/src/.env"), "deny"),
    (tool("Read", file_path="/srv/project/README.md"), "abstain"),
    (tool("Read", file_path="/srv/project/.envrc"), "abstain"),
])
def test_path_rules(policy_from: Build, call: ToolCall, kind: str) -> None:
    assert decide(policy_from(PATHS), call).kind == kind


def test_symlink_to_denied_file_is_denied(policy_from: Build, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("SECRET=1")
    os.symlink(tmp_path / ".env", tmp_path / "innocent.txt")
    call = tool("Read", cwd=str(tmp_path), file_path="innocent.txt")
    assert decide(policy_from(PATHS), call).kind == "deny"


# -- domains, web search, MCP, subagents -----------------------------------------------------
WEB = """
version: 1
permissions:
  deny: ['WebFetch(domain:evil.com)', 'WebFetch(domain:*.corp.internal)', 'mcp__prod__*',
         'mcp__billing']
  ask: [WebSearch]
  allow: ['WebFetch(domain:docs.python.org)', 'mcp__github__get_issue']
"""


@pytest.mark.parametrize(("url", "kind"), [
    ("https://evil.com/x", "deny"), ("https://EVIL.com./x", "deny"),
    ("https://user:pw@evil.com:8443/x", "deny"), ("evil.com/path", "deny"),
    ("https://good.com\\@evil.com/", "deny"), ("https://ev%69l.com/", "deny"),
    ("https://vault.corp.internal/", "deny"), ("https://corp.internal/", "abstain"),
    ("https://notevil.com/", "abstain"), ("https://evil.com.example.org/", "abstain"),
    ("https://docs.python.org/3/", "allow"),
])
def test_domains(policy_from: Build, url: str, kind: str) -> None:
    assert decide(policy_from(WEB), tool("WebFetch", url=url, prompt="p")).kind == kind


@pytest.mark.parametrize(("name", "kind"), [
    ("mcp__prod__query", "deny"), ("mcp__prod__drop", "deny"), ("mcp__billing__refund", "deny"),
    ("mcp__github__get_issue", "allow"), ("mcp__github__create_pr", "abstain"),
    ("mcp__production__x", "abstain"), ("WebSearch", "ask"),
])
def test_tools_by_name_and_pattern(policy_from: Build, name: str, kind: str) -> None:
    assert decide(policy_from(WEB), tool(name, query="q")).kind == kind


def test_subagent_calls_are_decided_the_same(policy_from: Build) -> None:
    policy = policy_from(_deny("Bash(rm:*)"))
    call = ToolCall("Bash", {"command": "rm -rf x"}, agent_id="a-1", agent_type="Explore")
    assert decide(policy, call).kind == "deny"


# -- monitor mode ----------------------------------------------------------------------------
def test_monitor_rule_records_without_blocking(policy_from: Build) -> None:
    policy = policy_from("""
        version: 1
        permissions:
          ask: ['Bash(git push:*)']
        rules:
          - {id: watch-rm, mode: monitor, reason: would block rm, rule: 'Bash(rm:*)'}
        """)
    decision = decide(policy, bash("rm x"))
    assert (decision.kind, decision.would_deny, decision.rule_id) == ("abstain", True, "watch-rm")
    both = decide(policy, bash("rm x && git push"))
    assert (both.kind, both.would_deny) == ("ask", True)


def test_monitor_file(policy_from: Build) -> None:
    policy = policy_from("version: 1\nmode: monitor\npermissions:\n  deny: ['Bash(rm:*)']\n")
    decision = decide(policy, bash("rm x"))
    assert (decision.kind, decision.would_deny) == ("abstain", True)
    unparseable = decide(policy, bash("$x"))  # the built-in rules' answer is monitored too
    assert (unparseable.kind, unparseable.would_deny) == ("abstain", True), unparseable


def test_default_decision(policy_from: Build) -> None:
    policy = policy_from("version: 1\ndefault: ask\npermissions:\n  allow: ['Bash(ls:*)']\n")
    assert decide(policy, bash("ls")).kind == "allow"
    decision = decide(policy, bash("make"))
    assert (decision.kind, decision.rule_id) == ("ask", "org.yaml:default")


def test_a_cwd_symlink_re_pointed_between_decisions_is_resolved_anew(
    policy_from: Build, tmp_path: Path
) -> None:
    # Anchors are resolved once per decision, never carried to the next: an agent that
    # re-points its working directory's symlink gets the new target checked.
    policy = policy_from("""
        version: 1
        permissions:
          deny: ['Read(./secret/**)']
        """)
    for name in ("a", "b"):
        (tmp_path / name / "secret").mkdir(parents=True)
    link = tmp_path / "work"
    os.symlink(tmp_path / "a", link)
    read_a = tool("Read", cwd=str(link), file_path=str(tmp_path / "a" / "secret" / "k"))
    read_b = tool("Read", cwd=str(link), file_path=str(tmp_path / "b" / "secret" / "k"))
    assert decide(policy, read_a).kind == "deny"
    assert decide(policy, read_b).kind != "deny"
    link.unlink()
    os.symlink(tmp_path / "b", link)
    assert decide(policy, read_b).kind == "deny"
    assert decide(policy, read_a).kind != "deny"
