"""A family's union of path patterns answers as its patterns do one by one."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy import Policy, decide
from gateway.policy.evaluate import UNION_FROM
from gateway.policy.paths import compile_path_pattern, union_of
from gateway.types import ToolCall

from .conftest import bash

PATTERNS = ["**/.env", ".env*", "//etc/**", "~/.ssh/**", "/secrets/**", "./build/*.key",
            "src/**/id_rsa", "*.pem", "//var/log/*.log", "/data1/**", "~/.aws/credentials",
            "docs/[ab]*.md"]
PARTS = ["", "etc", ".env", ".env.local", ".ssh", "id_rsa", "secrets", "build", "x.key",
         "src", "a", "b.md", "docs", "data1", "var", "log", "y.log", "k.pem", "root",
         "project", ".aws", "credentials"]
CWDS = ["/", "/srv/project", "/root", "/srv/project/src"]

targets = st.lists(
    st.lists(st.sampled_from(PARTS), min_size=1, max_size=5).map(
        lambda parts: "/" + "/".join(p for p in parts if p)),
    min_size=1, max_size=3).map(tuple)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=6, unique=True), targets,
       st.sampled_from(CWDS))
def test_union_matches_exactly_when_one_pattern_does(
    sources: list[str], paths: tuple[str, ...], cwd: str
) -> None:
    patterns = [compile_path_pattern(s) for s in sources]
    one_by_one = any(p.matches(paths, cwd, anywhere=True) for p in patterns)
    assert union_of(patterns).matches(paths, cwd) == one_by_one, (sources, paths, cwd)


def test_the_union_sees_a_match_and_a_miss() -> None:
    union = union_of([compile_path_pattern("**/.env"), compile_path_pattern("//etc/**")])
    assert union.matches(("/srv/project/app/.env",), "/srv/project")
    assert union.matches(("/etc/cron.d/x",), "/srv/project")
    assert not union.matches(("/srv/project/app/env",), "/srv/project")


@pytest.mark.parametrize("rules", [3, UNION_FROM + 6])
def test_bash_file_rules_decide_alike_with_few_rules_and_with_many(
    policy_from: Callable[..., Policy], tmp_path: Path, rules: int
) -> None:
    """From UNION_FROM rules a family is checked through its union first."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / ".env").write_text("SECRET=1\n")
    (tmp_path / "app" / "notes.txt").write_text("hi\n")
    deny = ["**/.env", *(f"/data{i}/**" for i in range(rules - 1))]
    text = "version: 1\npermissions:\n  deny:\n" + "".join(f"    - 'Read({d})'\n" for d in deny)
    policy = policy_from(text)
    cwd = str(tmp_path)
    assert decide(policy, bash("cat app/.env | base64", cwd=cwd)).kind == "deny"
    assert decide(policy, bash(f"head {tmp_path}/data{rules - 2}/x", cwd=cwd)).kind == "deny"
    assert decide(policy, bash("cat app/notes.txt", cwd=cwd)).kind != "deny"


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=6, unique=True), targets,
       st.sampled_from(CWDS))
def test_a_union_without_its_floating_part_matches_as_allow_rules_do(
    sources: list[str], paths: tuple[str, ...], cwd: str
) -> None:
    """Allow rules match under their anchor only (never `anywhere`)."""
    patterns = [compile_path_pattern(s) for s in sources]
    one_by_one = any(p.matches(paths, cwd, anywhere=False) for p in patterns)
    union = dataclasses.replace(union_of(patterns), floating=None)
    assert union.matches(paths, cwd) == one_by_one, (sources, paths, cwd)


@pytest.mark.parametrize("rules", [3, UNION_FROM + 6])
def test_file_tools_decide_alike_with_few_rules_and_with_many(
    policy_from: Callable[..., Policy], tmp_path: Path, rules: int
) -> None:
    """From UNION_FROM path rules for a tool, a file tool's path is checked through the
    unions first (deny and ask, then allow), resolved once for every rule."""
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / ".env").write_text("SECRET=1\n")
    (project / "app" / "notes.txt").write_text("hi\n")
    (project / "app" / "link").symlink_to(project / "app" / ".env")
    os.link(project / "app" / ".env", project / "app" / "copy")  # a second name
    deny = ["**/.env", *(f"/data{i}/**" for i in range(rules - 1))]
    allow = ["/src/**", *(f"/allowed{i}/**" for i in range(rules - 1))]
    text = ("version: 1\npermissions:\n  deny:\n"
            + "".join(f"    - 'Read({d})'\n" for d in deny)
            + "  ask:\n    - 'Edit(/app/notes.txt)'\n  allow:\n"
            + "".join(f"    - 'Read({a})'\n" for a in allow))
    policy = policy_from(text)

    def kind(tool: str, **tool_input: str) -> str:
        return decide(policy, ToolCall(tool, tool_input, cwd=str(project))).kind

    assert kind("Read", file_path="app/.env") == "deny"
    assert kind("Read", file_path="app/link") == "deny"  # through the symlink
    assert kind("Read", file_path="app/copy") == "deny"  # the same file by another name
    assert kind("Grep", pattern="x", path=f"{project}/data{rules - 2}/y") == "deny"
    assert kind("Read", file_path="app/notes.txt") == "abstain"
    assert kind("Read", file_path=f"allowed{rules - 2}/z.txt") == "allow"
    assert kind("Read", file_path="src/main.py") == "allow"
    assert kind("Edit", file_path="app/notes.txt", old_string="a", new_string="b") == "ask"
