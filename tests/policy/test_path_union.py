"""A family's union of path patterns answers as its patterns do one by one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy import Policy, decide
from gateway.policy.evaluate import UNION_FROM
from gateway.policy.paths import compile_path_pattern, union_of

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
