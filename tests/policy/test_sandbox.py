"""`sandbox: required`: the schema and layering, the policy compiled into Claude Code's OS
sandbox settings, and the decisions a sandboxed session gets (what the hook leaves to it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gateway.errors import PolicyError
from gateway.handlers.decision import answer_pre_tool_use
from gateway.policy import Policy, load_policy
from gateway.policy.builtin import Protected
from gateway.policy.evaluate import explain
from gateway.policy.sandbox import compile_sandbox, sandbox_fingerprint
from gateway.types import ToolCall

PLATFORM = """\
version: 1
sandbox: required
permissions:
  deny:
    - Bash(rm -rf:*)
    - Read(**/.env)
    - Read(~/.ssh/**)
    - Read(/config/secrets.yaml)
    - Edit(.github/workflows/**)
    - WebFetch(domain:pastebin.com)
    - WebFetch(domain:*.evil.example)
  ask:
    - Read(**/*.pem)
rules:
  - id: watch-only
    mode: monitor
    rule: Read(**/notes.txt)
"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _protected(tmp_path: Path) -> Protected:
    home = tmp_path / "gw-home"
    return Protected(str(home), secrets=(str(home / "cache" / "cache.key"),),
                     code=(str(tmp_path / "site-packages"),))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / ".env").write_text("TOKEN=marker\n")
    return root


@pytest.fixture
def platform(tmp_path: Path) -> Policy:
    return load_policy([_write(tmp_path, "org.yaml", PLATFORM)], _protected(tmp_path))


def _bash(command: str, cwd: Path, **extra: object) -> ToolCall:
    return ToolCall("Bash", {"command": command, **extra}, cwd=str(cwd))


# -- schema and layering -------------------------------------------------------------------
def test_the_default_is_off_and_required_is_read(tmp_path: Path, platform: Policy) -> None:
    plain = load_policy([_write(tmp_path, "plain.yaml", "version: 1\n")])
    assert plain.sandbox == "off" and plain.sandbox_fingerprint == ""
    assert platform.sandbox == "required" and len(platform.sandbox_fingerprint) == 16


def test_a_bad_value_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "org.yaml", "version: 1\nname: x\nsandbox: maybe\n")
    with pytest.raises(PolicyError) as caught:
        load_policy([path])
    assert f"{path}:3:" in str(caught.value) and "sandbox" in str(caught.value)


def test_a_lower_file_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    org = _write(tmp_path, "org.yaml", "version: 1\nsandbox: required\n")
    team = _write(tmp_path, "team.yaml", "version: 1\nname: team\nsandbox: off\n")
    with pytest.raises(PolicyError) as caught:
        load_policy([org, team])
    assert f"{team}:3:" in str(caught.value) and "loosens 'required'" in str(caught.value)


def test_any_file_may_require_it(tmp_path: Path) -> None:
    org = _write(tmp_path, "org.yaml", "version: 1\nsandbox: off\n")
    team = _write(tmp_path, "team.yaml", "version: 1\nsandbox: required\n")
    assert load_policy([org, team]).sandbox == "required"
    assert load_policy([org]).sandbox == "off"


# -- the compiled sandbox ------------------------------------------------------------------
def test_file_and_domain_denies_compile_into_claude_codes_settings(
    tmp_path: Path, platform: Policy
) -> None:
    settings = compile_sandbox(platform.layers, str(tmp_path)).settings()
    sandbox = settings["sandbox"]
    assert sandbox["enabled"] is True
    assert sandbox["failIfUnavailable"] is True
    assert sandbox["allowUnsandboxedCommands"] is False
    denies = settings["permissions"]["deny"]
    for rule in ("Read(**/.env)", "Read(~/.ssh/**)", "Read(./config/secrets.yaml)",
                 "Edit(./.github/workflows/**)"):
        assert rule in denies
    # ask rules need a person; monitor rules enforce nothing: neither reaches the kernel
    assert not any("pem" in rule or "notes.txt" in rule for rule in denies)
    assert sandbox["network"] == {"allowedDomains": ["*"],
                                  "deniedDomains": ["pastebin.com", "*.evil.example"]}
    # built-in protections, written under ~ when they are in the home directory
    # the gateway's state and keys, and every built-in credential store, in both lists
    deny_read = sandbox["filesystem"]["denyRead"]
    assert deny_read[:2] == ["~/gw-home", "~/gw-home/cache/cache.key"]
    for store in ("~/.netrc", "~/.git-credentials", "~/.config/gh/hosts.yml",
                  "~/.docker/config.json", "~/.kube/config", "~/.npmrc", "~/.pypirc",
                  "~/.aws/credentials", "~/.config/gcloud/credentials.db",
                  "~/.azure/msal_token_cache.json", "~/.ssh/id_*"):
        assert store in deny_read and store in sandbox["filesystem"]["denyWrite"], store
    assert "~/gw-home" in sandbox["filesystem"]["denyWrite"]
    assert "~/site-packages" in sandbox["filesystem"]["denyWrite"]
    assert "Edit(./.claude/settings.json)" in denies
    # git writes its own configuration (`git remote add`, `git push -u`): the hook holds it
    everything = [*denies, *sandbox["filesystem"]["denyWrite"]]
    assert not any(".git/" in rule and "github" not in rule for rule in everything), everything


def test_webfetch_restricted_to_a_list_restricts_the_network(tmp_path: Path) -> None:
    policy = load_policy([_write(tmp_path, "org.yaml", """\
version: 1
sandbox: required
permissions:
  deny: [WebFetch]
  allow: ["WebFetch(domain:pypi.org)", "WebFetch(domain:*.github.com)"]
""")], _protected(tmp_path))
    network = compile_sandbox(policy.layers, "/").settings()["sandbox"]["network"]
    assert network == {"allowedDomains": ["pypi.org", "*.github.com"]}


def test_a_write_grant_never_reopens_a_protected_path(tmp_path: Path) -> None:
    home = tmp_path / "gw-home"
    policy = load_policy([_write(tmp_path, "org.yaml", f"""\
version: 1
sandbox: required
permissions:
  allow: ["Edit(//{tmp_path}/**)", "Edit(//srv/data/**)"]
""")], Protected(str(home)))
    filesystem = compile_sandbox(policy.layers, "/").settings()["sandbox"]["filesystem"]
    assert filesystem["allowWrite"] == ["//srv/data"]


def test_the_fingerprint_names_the_policy_files_rules_only(tmp_path: Path) -> None:
    org = _write(tmp_path, "org.yaml", PLATFORM)
    here = load_policy([org], _protected(tmp_path))
    elsewhere = load_policy([org], Protected(str(tmp_path / "other-home")))
    assert here.sandbox_fingerprint == elsewhere.sandbox_fingerprint
    assert here.sandbox_fingerprint == sandbox_fingerprint(here.layers)
    changed = load_policy([_write(tmp_path, "org2.yaml", PLATFORM.replace(
        "Read(~/.ssh/**)", "Read(~/.aws/**)"))], _protected(tmp_path))
    assert changed.sandbox_fingerprint != here.sandbox_fingerprint
    commands_only = load_policy([_write(tmp_path, "org3.yaml", PLATFORM.replace(
        "Bash(rm -rf:*)", "Bash(rm -r:*)"))], _protected(tmp_path))
    assert commands_only.sandbox_fingerprint == here.sandbox_fingerprint


# -- what a sandboxed session is decided --------------------------------------------------
LEFT_TO_THE_KERNEL = [
    "cat $(echo .e)nv",  # a path computed at run time
    'cat "$(printf .e%s nv | tr -d x)"',
    'x=.e; x+=nv; cat "$x"',  # += : a value the analysis does not follow
    "frob --input .env",  # an unknown program's argument
]


@pytest.mark.parametrize("command", LEFT_TO_THE_KERNEL)
def test_what_only_the_kernel_sees_is_left_to_the_sandbox(
    platform: Policy, project: Path, command: str
) -> None:
    hook_only = explain(platform, _bash(command, project)).decision
    assert hook_only.kind == "deny" and hook_only.enforced_by == "hook"
    sandboxed = explain(platform, _bash(command, project), sandboxed=True).decision
    assert sandboxed.kind == "abstain", sandboxed
    assert sandboxed.enforced_by == "sandbox"
    assert "left to the OS sandbox" in sandboxed.reason


@pytest.mark.parametrize("command", [
    "cat .env", "cat src/../.env", "cd src && cat ../.env", "rm -rf src",
    "cat ~/.ssh/id_rsa", "echo x > .github/workflows/ci.yml",
    'cat "$(printf .e%s nv)"',  # a substitution whose output its text says
])
def test_what_the_hook_can_prove_it_still_denies(
    platform: Policy, project: Path, command: str
) -> None:
    decision = explain(platform, _bash(command, project), sandboxed=True).decision
    assert decision.kind == "deny" and decision.enforced_by == "hook", decision


def test_an_ask_rule_is_not_left_to_the_sandbox(platform: Policy, project: Path) -> None:
    (project / "key.pem").write_text("pem\n")
    decision = explain(platform, _bash("frob key.pem", project), sandboxed=True).decision
    assert decision.kind == "ask" and decision.enforced_by == "hook"


def test_the_sandbox_cannot_be_asked_away(platform: Policy, project: Path) -> None:
    call = _bash("ls", project, dangerouslyDisableSandbox=True)
    for sandboxed in (False, True):
        decision = explain(platform, call, sandboxed=sandboxed).decision
        assert decision.kind == "deny" and decision.rule_id == "builtin:sandbox-required"
    plain = load_policy([_write(project.parent, "plain.yaml", "version: 1\n")])
    assert explain(plain, call).decision.kind == "abstain"


def test_without_a_sandbox_bash_is_refused(platform: Policy, project: Path) -> None:
    decision = explain(platform, _bash("ls", project),
                       sandbox_unavailable="bubblewrap is not installed").decision
    assert decision.kind == "deny" and "bubblewrap is not installed" in decision.reason
    read = explain(platform, ToolCall("Read", {"file_path": "src/app.py"}, cwd=str(project)),
                   sandbox_unavailable="bubblewrap is not installed").decision
    assert read.kind == "abstain"


def test_a_session_is_sandboxed_only_with_this_policys_fingerprint(
    tmp_path: Path, platform: Policy, project: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    body = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "cat $(echo .e)nv"}, "session_id": "s1",
                       "tool_use_id": "t1", "cwd": str(project)})
    outcomes = {}
    for claimed in ("", "0" * 16, platform.sandbox_fingerprint):
        answer = answer_pre_tool_use(body, lambda: platform, audit_log=audit, sandbox=claimed)
        outcomes[claimed] = answer.decision.kind
        assert answer.record is not None
        assert answer.record["enforced_by"] == answer.decision.enforced_by
    assert outcomes == {"": "deny", "0" * 16: "deny", platform.sandbox_fingerprint: "abstain"}
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [r["enforced_by"] for r in records] == ["hook", "hook", "sandbox"]


def test_a_hard_link_search_that_cannot_finish_cannot_tell(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gateway.policy.paths as paths

    monkeypatch.setattr(paths, "MAX_LINK_SEARCH", 10)
    os.link(project / ".env", project / "innocent.txt")
    for n in range(40):
        (project / "src" / f"pkg{n}").mkdir()
    policy = load_policy([_write(tmp_path, "org.yaml", """\
version: 1
sandbox: required
permissions:
  deny: ["Read(//nowhere/**/.env)"]
""")], _protected(tmp_path))
    call = _bash("cat innocent.txt", project)
    hook_only = explain(policy, call).decision
    assert hook_only.kind == "deny" and "could not finish searching" in hook_only.reason
    assert explain(policy, call, sandboxed=True).decision.enforced_by == "sandbox"
    read = explain(policy, ToolCall("Read", {"file_path": "innocent.txt"}, cwd=str(project)),
                   sandboxed=True).decision
    assert read.kind == "deny"  # the file tools run outside the sandbox


@pytest.mark.parametrize(("command", "kind"), [
    ("cat $(echo .e)nv", "deny"),  # the expansion may end with `.e`: `.env`
    ("cat ${x}v", "deny"),
    ("cat $x.pem", "deny"),
    ("cat $d/.env", "deny"),
    ("cat $x.pe", "abstain"),  # no name ending `.pe` is `.env` or `*.pem`
    ("tar cf $archive.tar src", "abstain"),
    ("cat $x/notes.txt", "abstain"),
])
def test_a_computed_name_is_uncertain_only_where_it_could_complete_a_denied_one(
    tmp_path: Path, project: Path, command: str, kind: str
) -> None:
    policy = load_policy([_write(tmp_path, "org.yaml", """\
version: 1
self_protection: false
permissions:
  deny: ["Read(**/.env)", "Read(**/*.pem)"]
""")])
    assert explain(policy, _bash(command, project)).decision.kind == kind


@pytest.mark.parametrize("command", [
    "cat *.txt | wc -l", "rm -f *.o", "top -b -n1 -p $(pgrep -d, http)",
    "touch -d \"$(date -r src/app.py) - 2 hours\" src/app.py", "grep '*.txt' src/app.py",
])
def test_ordinary_commands_are_not_denied_in_either_mode(
    platform: Policy, project: Path, command: str
) -> None:
    for sandboxed in (False, True):
        decision = explain(platform, _bash(command, project), sandboxed=sandboxed).decision
        assert decision.kind == "abstain", (sandboxed, decision)
