"""Each rule of a table, in Claude Code 2.1.332's `permissions.deny` and in a gateway policy's:
what Claude Code warns about it at start-up and what it decides in `-p` runs whose scripted
model asks for each probe call, against what the gateway decides and what `agent-gateway
policy check` says about the rule (run on a policy file holding the whole table).

- A rule `policy check` does not report: Claude Code never denies a probe the gateway allows,
  and on the rule as written (the probes marked `written`) both decide alike; Claude Code
  does not warn about it.
- A rule it reports: Claude Code warns about it, or decides a probe otherwise.
- A rewrite it offers ("in Claude Code's syntax: ..."): Claude Code, given the rewrite, decides
  every probe as the gateway decides the original.

The settings file sits outside the project, as a managed drop-in or `--settings` does. Bash
probes run harmless commands (`echo`) with the rule's shape, since an allowed probe runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gateway.policy import load_policy
from gateway.policy.evaluate import decide
from gateway.policy.parity import read_rule
from gateway.policy.tool_names import unknown_tool
from gateway.scripted import ScriptedServer
from gateway.types import ToolCall
from tests.e2e.harness import CLAUDE_BIN, parse_lines

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MCP_STUB = Path(__file__).with_name("mcp_stub.py")
ALLOWED = ("Bash,Read,Edit,Write,Glob,Grep,WebFetch,mcp__prod_db__drop_table,"
           "mcp__prod_db__query")


@dataclass(frozen=True)
class Probe:
    tool: str
    input: dict[str, Any]
    written: bool = False
    """The rule as written, its stars filled in: both sides must agree on a same rule."""


def bash(command: str, written: bool = False) -> Probe:
    return Probe("Bash", {"command": command}, written)


def read(path: str, written: bool = False) -> Probe:
    return Probe("Read", {"file_path": path}, written)


def write(path: str, written: bool = False) -> Probe:
    return Probe("Write", {"file_path": path, "content": "x"}, written)


def fetch(url: str, written: bool = False) -> Probe:
    return Probe("WebFetch", {"url": url, "prompt": "p"}, written)


def mcp(name: str, written: bool = False) -> Probe:
    return Probe(f"mcp__prod_db__{name}", {}, written)


# CWD, HOME: the session's directory and home. Files under them exist before each run.
FILES = ("CWD/sub/s.txt", "CWD/a/s.txt", "CWD/a/sub/s.txt", "HOME/s.txt", "OUT/s.txt")
TABLE: list[tuple[str, list[Probe]]] = [
    # Bash: a * inside a :* prefix, :* placement, wildcards, exact commands
    ("Bash(echo of=/dev/*:*)", [bash("echo of=/dev/sda", True), bash("echo of=/dev/sda bs=1")]),
    ("Bash(echo -rf:*)", [bash("echo -rf x", True), bash("echo -rf"), bash("echo -rfx"),
                          bash("true && echo -rf x"), bash("echo -r")]),
    ("Bash(echo run test*)", [bash("echo run test:unit", True), bash("echo run test all")]),
    ("Bash(echo:* hi)", [bash("echo: x hi", True), bash("echo x hi")]),
    ("Bash(echo a b *)", [bash("echo a b c", True), bash("echo a b"), bash("echo a bc")]),
    ("Bash(echo * b)", [bash("echo a b", True), bash("echo b")]),
    ("Bash(echo hi)", [bash("echo hi", True), bash("echo hi there")]),
    ("Bash(ech*:*)", [bash("echo x", True), bash("printf x")]),
    # file rules: anchors / // ~ ./, tools Claude Code's file checks do not match
    ("Read(/sub/s.txt)", [read("CWD/sub/s.txt", True)]),
    ("Read(./sub/s.txt)", [read("CWD/sub/s.txt", True), read("CWD/a/sub/s.txt")]),
    ("Read(sub/s.txt)", [read("CWD/sub/s.txt", True), read("CWD/a/sub/s.txt")]),
    ("Read(**/s.txt)", [read("CWD/a/s.txt", True), read("OUT/s.txt")]),
    ("Read(s.txt)", [read("CWD/a/s.txt", True)]),
    ("Read(~/s.txt)", [read("HOME/s.txt", True), read("CWD/a/s.txt")]),
    ("Read(//etc/host*)", [read("/etc/hostname", True), read("CWD/a/s.txt")]),
    ("Read(/a/**)", [Probe("Grep", {"pattern": "x", "path": "CWD/a/s.txt"}, True)]),
    ("Edit(**/n.txt)", [write("CWD/n.txt", True), write("CWD/m.txt")]),
    ("Edit(/m/**)", [write("CWD/m/n.txt", True)]),
    ("Write(**/n.txt)", [write("CWD/n.txt", True)]),
    ("Glob(a/**)", [Probe("Glob", {"pattern": "*", "path": "CWD/a"}, True)]),
    # domains
    ("WebFetch(domain:*.example.com)", [fetch("https://a.example.com/x", True),
                                        fetch("https://example.com/x")]),
    ("WebFetch(domain:example.com)", [fetch("https://example.com/x", True),
                                      fetch("https://a.example.com/x")]),
    # MCP names and patterns
    ("mcp__prod_db__*", [mcp("drop_table", True), mcp("query", True)]),
    ("mcp__prod_db__drop*", [mcp("drop_table", True), mcp("query")]),
    ("mcp__prod_db", [mcp("drop_table", True)]),
    ("mcp__prod_db__drop_table", [mcp("drop_table", True), mcp("query")]),
]
WARNED_ONLY = ["WebSearch(foo*)", "MultiEdit(**/x)", "LS(**/x)", "NotebookEdit(**/x)"]
"""Rules checked by Claude Code's start-up warnings alone (a probe would need the network)."""


@dataclass
class Session:
    """A project, a home and a directory outside both, for one run of Claude Code."""

    base: Path
    cwd: Path = field(init=False)
    home: Path = field(init=False)

    def __post_init__(self) -> None:
        self.cwd, self.home = self.base / "work", self.base / "home"
        for name in FILES:
            path = self.path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x\n")

    def path(self, text: str) -> Path:
        return Path(self.fill(text))

    def fill(self, text: str) -> str:
        return (text.replace("CWD", str(self.cwd)).replace("HOME", str(self.home))
                .replace("OUT", str(self.base / "outside")))

    def call(self, probe: Probe) -> dict[str, Any]:
        return {k: self.fill(v) if isinstance(v, str) else v for k, v in probe.input.items()}


def _claude(session: Session, denies: Sequence[str], prompt: str,
            responses: list[dict[str, Any]], *, text: bool = False
            ) -> subprocess.CompletedProcess[str]:
    elsewhere = session.base / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    settings = elsewhere / "settings.json"
    settings.write_text(json.dumps({"permissions": {"deny": list(denies)}}))
    mcp_config = elsewhere / "mcp.json"
    mcp_config.write_text(json.dumps({"mcpServers": {"prod_db": {
        "command": sys.executable, "args": [str(MCP_STUB)]}}}))
    with ScriptedServer({"responses": responses}) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        env.update(HOME=str(session.home), ANTHROPIC_API_KEY="scripted", ANTHROPIC_BASE_URL=
                   server.url, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   CLAUDE_CODE_MAX_RETRIES="1")
        output = [] if text else ["--output-format", "stream-json", "--verbose"]
        return subprocess.run(
            [str(CLAUDE_BIN), "-p", prompt, *output, "--allowedTools", ALLOWED,
             "--settings", str(settings), "--mcp-config", str(mcp_config),
             "--strict-mcp-config"],
            cwd=session.cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def claude_denies(base: Path, rule: str, probe: Probe) -> bool:
    """Claude Code's decision on one call with `rule` in permissions.deny."""
    session = Session(base)
    proc = _claude(session, [rule], "go", [
        {"when": "prompt", "text": "t", "tool_use": [{"name": probe.tool,
                                                      "input": session.call(probe)}]}])
    messages = parse_lines(proc.stdout)
    results = [m for m in messages if m.get("type") == "result"]
    assert results, proc.stderr[-2000:]
    if results[-1].get("permission_denials"):
        return True
    # a rule naming a whole tool takes it away: the call finds no such tool
    tool_results = [str(b.get("content")) for m in messages if m.get("type") == "user"
                    for b in m["message"].get("content", []) if isinstance(b, dict)]
    return any("No such tool available" in r for r in tool_results)


def claude_warnings(base: Path, rules: Sequence[str]) -> str:
    """What Claude Code prints about the rules at start-up (text mode prints it on stderr)."""
    proc = _claude(Session(base), rules, "hi", [{"text": "hi", "times": 0}], text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stderr


def gateway_denies(base: Path, rule: str, probe: Probe) -> bool:
    session = Session(base)
    policy = base / "org.yaml"
    policy.write_text(f"version: 1\nself_protection: false\npermissions:\n  deny:\n"
                      f"    - {json.dumps(rule)}\n")
    # As the hook decides: in the session's environment, where `~` is the session's home.
    call = ToolCall(probe.tool, session.call(probe), cwd=str(session.cwd),
                    environ={**os.environ, "HOME": str(session.home)})
    return decide(load_policy([str(policy)]), call).kind == "deny"


def _warned(warnings: str, rule: str) -> bool:
    """Whether a start-up warning is about `rule` (not merely suggests it instead)."""
    return any(f'rule "{rule}"' in line or f"): {rule} " in line
               for line in warnings.splitlines())


@dataclass
class Observed:
    claude: list[bool]
    gateway: list[bool]
    claude_rewrite: list[bool] | None


@dataclass(frozen=True)
class Checked:
    reported: bool
    rewrite: str | None


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Checked]:
    """What `policy check` says about each rule of the table: a note, and a rewrite."""
    rules = [rule for rule, _ in TABLE] + WARNED_ONLY
    policy = tmp_path_factory.mktemp("check") / "org.yaml"
    policy.write_text("version: 1\npermissions:\n  deny:\n"
                      + "".join(f"    - {json.dumps(rule)}\n" for rule in rules))
    proc = subprocess.run([sys.executable, "-m", "gateway", "policy", "check", str(policy)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    notes = {int(line.split(":")[1]): line for line in proc.stderr.splitlines()
             if ": note: " in line}
    found = {}
    for line_number, rule in enumerate(rules, start=4):
        note = notes.get(line_number)
        assert note is None or f"note: {rule} means something else" in note, note
        rewrite = note.split("in Claude Code's syntax: ", 1)[1] if note and (
            "in Claude Code's syntax: " in note) else None
        found[rule] = Checked(note is not None, rewrite)
    return found


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory, checked: dict[str, Checked]
             ) -> dict[str, Observed]:
    jobs: list[tuple[str, str, Probe]] = []  # (rule as run in Claude Code, table rule, probe)
    for rule, probes in TABLE:
        mirror = checked[rule].rewrite
        for probe in probes:
            jobs.append((rule, rule, probe))
            if mirror is not None and mirror != rule:
                jobs.append((mirror, rule, probe))

    def run(job: tuple[str, str, Probe]) -> bool:
        return claude_denies(tmp_path_factory.mktemp("probe"), job[0], job[2])

    with ThreadPoolExecutor(max_workers=2) as pool:
        decisions = list(pool.map(run, jobs))
    found: dict[str, Observed] = {}
    for (ran, rule, probe), denied in zip(jobs, decisions, strict=True):
        entry = found.setdefault(rule, Observed([], [], None))
        if ran == rule:
            entry.claude.append(denied)
            entry.gateway.append(gateway_denies(tmp_path_factory.mktemp("gw"), rule, probe))
        else:
            entry.claude_rewrite = [*(entry.claude_rewrite or []), denied]
    return found


@pytest.fixture(scope="module")
def warnings(tmp_path_factory: pytest.TempPathFactory) -> str:
    rules = [rule for rule, _ in TABLE] + WARNED_ONLY + ["Bsh(rm:*)"]
    return claude_warnings(tmp_path_factory.mktemp("warnings"), rules)


def _rows() -> Iterator[Any]:
    for rule, probes in TABLE:
        yield pytest.param(rule, probes, id=rule)


@pytest.mark.parametrize(("rule", "probes"), list(_rows()))
def test_policy_check_reads_the_rule_as_claude_code_does(
    rule: str, probes: list[Probe], observed: dict[str, Observed], warnings: str,
    checked: dict[str, Checked],
) -> None:
    seen = observed[rule]
    reported = checked[rule].reported
    assert reported == (not read_rule(rule).same)  # the floor and the report agree
    table = [f"{p.tool} {p.input}: claude {'deny' if c else 'allow'}, gateway "
             f"{'deny' if g else 'allow'}" for p, c, g in zip(probes, seen.claude, seen.gateway,
                                                              strict=True)]
    if not reported:
        assert not _warned(warnings, rule), warnings
        for probe, claude, gateway in zip(probes, seen.claude, seen.gateway, strict=True):
            assert not (claude and not gateway), table  # never denies what the gateway allows
            if probe.written:
                assert claude == gateway, table
    else:
        disagree = seen.claude != seen.gateway
        assert _warned(warnings, rule) or disagree, table
    if seen.claude_rewrite is not None:
        assert seen.claude_rewrite == seen.gateway, (checked[rule].rewrite, table)


@pytest.mark.parametrize("rule", WARNED_ONLY)
def test_rules_claude_code_warns_about_are_reported(
    rule: str, warnings: str, checked: dict[str, Checked]
) -> None:
    assert _warned(warnings, rule), warnings
    assert checked[rule].reported


def test_a_tool_name_nothing_has_is_an_error_on_both_sides(warnings: str) -> None:
    assert 'Permission deny rule "Bsh(rm:*)" matches no known tool' in warnings
    assert unknown_tool("Bsh") is not None


def _policy_rules() -> Iterator[tuple[str, str]]:
    from gateway.policy.loader import parse_file
    from gateway.policy.parity import rule_strings

    for path in sorted((ROOT / "policies").glob("*.yaml")):
        if not path.name.endswith(".tests.yaml"):
            _, spec = parse_file(str(path), path.read_bytes())
            for _, rule in rule_strings(spec):
                yield path.name, rule


@pytest.mark.parametrize("template", ["settings.local-gateway.json",
                                      "settings.command-hook.json",
                                      "managed-settings.d/50-agent-gateway.json"])
def test_the_shipped_floors_hold_only_rules_claude_code_reads_alike(
    template: str, tmp_path: Path
) -> None:
    denies = json.loads((ROOT / "hooks" / template).read_text())["permissions"]["deny"]
    # each one a rule both read alike, or the Claude Code spelling of a policy rule
    rewrites = {read_rule(rule).mirror for _, rule in _policy_rules()}
    assert [rule for rule in denies if not read_rule(rule).same and rule not in rewrites] == []
    printed = claude_warnings(tmp_path, denies)
    assert "Permission deny rule" not in printed, printed
