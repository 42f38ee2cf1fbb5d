"""`policy check` names, file:line, every rule Claude Code 2.1.332 reads with another meaning
(tests/e2e/test_rule_parity.py holds the readings against Claude Code itself), and the floor
`settings` mirrors holds only rules Claude Code reads alike, saying which it left out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.policy.commands import policy_check
from gateway.policy.credential_stores import CREDENTIAL_STORES
from gateway.policy.loader import parse_file
from gateway.policy.parity import read_rule, rule_strings

from .conftest import WritePolicy

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "policies" / f"{name}.yaml" for name in ("org", "team", "project")]


def test_every_shipped_rule_means_the_same_or_is_reported(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert policy_check([str(p) for p in SHIPPED]) == 0
    err = capsys.readouterr().err
    for path in SHIPPED:
        source, spec = parse_file(str(path), path.read_bytes())
        for loc, rule in rule_strings(spec):
            reported = f"{path}:{source.line(loc)}: note: {rule} means something else"
            assert read_rule(rule).same != (reported in err), (rule, err)


def test_the_report_says_what_each_side_does(
    write_policy: WritePolicy, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_policy(
        "version: 1\n"
        "permissions:\n"
        "  deny:\n"
        "    - Bash(rm -rf:*)\n"
        "    - Bash(dd of=/dev/*:*)\n"
        "    - Bash(git:* push)\n"
        "    - Edit(/migrations/**)\n"
        "    - Write(/docs/**)\n"
        "    - mcp__prod__*\n"
        "    - WebFetch(domain:*.example.com)\n"
    )
    assert policy_check([path]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert [line.split(": note: ")[0] for line in lines] == [
        f"{path}:{n}" for n in (5, 6, 7, 8)]
    assert ("the gateway: a prefix whose * matches within its word (`dd of=/dev/sda`); "
            "Claude Code: a literal prefix (the * is not expanded)") in lines[0]
    assert "in Claude Code's syntax: Bash(dd of=/dev/*)" in lines[0]
    assert "a * wildcard with a literal ':'" in lines[1] and "only the gateway" in lines[1]
    assert "in Claude Code's syntax: Edit(./migrations/**)" in lines[2]
    assert "never matches: only Edit(path) rules" in lines[3]
    assert "4 rule(s) Claude Code reads differently" in captured.out


def test_settings_mirror_same_meaning_rules_and_name_the_rest(tmp_path: Path) -> None:
    policy = tmp_path / "org.yaml"
    policy.write_text("version: 1\npermissions:\n  deny:\n    - Bash(rm -rf:*)\n"
                      "    - Bash(dd of=/dev/*:*)\n    - Write(/docs/**)\n"
                      "    - Bash(npm run test*)\n")
    proc = subprocess.run(
        [sys.executable, "-m", "gateway", "settings", "--url", "http://127.0.0.1:9",
         "--token", "--policy", "org.yaml"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    stores = {f"{tool}({path})" for paths in CREDENTIAL_STORES.values() for path in paths
              for tool in ("Read", "Edit")}  # the built-in credential stores come first
    denies = json.loads(proc.stdout)["permissions"]["deny"]
    assert set(denies[:len(stores)]) == stores
    assert denies[len(stores):] == [
        "Bash(rm -rf:*)", "Bash(dd of=/dev/*)"]
    held = [line for line in proc.stderr.splitlines() if "only the gateway holds" in line]
    assert held == [
        "agent-gateway settings: only the gateway holds org.yaml:permissions.deny[3] "
        "Write(/docs/**): Claude Code reads it differently, so it is not in permissions.deny "
        "(`agent-gateway policy check` says how)",
        "agent-gateway settings: only the gateway holds org.yaml:permissions.deny[4] "
        "Bash(npm run test*): Claude Code reads it differently, so it is not in "
        "permissions.deny (`agent-gateway policy check` says how)",
    ]


def test_settings_name_policy_files_where_they_are_read(tmp_path: Path) -> None:
    """A relative --policy is resolved where `settings` runs, and its error names the file."""
    (tmp_path / "project").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "gateway", "settings", "--url", "http://127.0.0.1:9",
         "--token", "--policy", "policies/org.yaml"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path / "project")
    assert proc.returncode == 2
    assert proc.stderr == (f"agent-gateway settings: error: {tmp_path}/project/policies/org.yaml:"
                           " cannot read policy file: No such file or directory\n")
