"""A family's union of path patterns answers as its patterns do one by one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.policy.paths import compile_path_pattern, union_of

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
