"""Whether a pattern and a path rule can name the same file (overlap.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.policy.overlap import could_name, meet, names_meet, path_forms, rule_shape
from gateway.policy.paths import compile_path_pattern
from gateway.policy.shell.globs import crossing
from gateway.policy.shell.words import Word


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("*.txt", ".env", False), ("*", ".env", True), (".e*", ".env", True),
    ("*.py", "*.pyc", False), ("*.py*", "*.pyc", True), ("x[abc]", "xb", True),
    ("x[!abc]", "xb", False), ("x[^abc]", "xd", True), ("?env", ".env", True),
    ("a*b*c", "*x*", True), ("a*", "b*", False), ("*a", "*b", False),
    ("[0-9]*", "5x", True), ("[0-9]*", "x5", False), ("[[:alpha:]]", "5", True),
])
def test_one_name_patterns(a: str, b: str, expected: bool) -> None:
    assert names_meet(a, b) is expected
    assert names_meet(b, a) is expected


def test_any_directories() -> None:
    assert meet(("**", "*.py"), ("**", ".env", "**"))  # inside a directory named .env
    assert not meet(("**", "*.py"), ("**", ".env"))
    assert meet(("a", "**", "c"), ("a", "b", "c"))
    assert not meet(("a", "*", "c"), ("a", "b", "d"))
    assert meet(("a", "**"), ("**", "z"))


@pytest.mark.parametrize(("pattern", "expected"), [
    ("*.env", "**/*.env"), ("src/*.py", "src/**/*.py"), ("a*/b.py", "**/b.py"),
    ("x/.e*", "x/**/*"), ("/s/*.py", "/s/**/*.py"),
])
def test_patterns_whose_star_crosses_directories(pattern: str, expected: str) -> None:
    assert crossing(pattern) == expected


def _could(pattern: str, rule: str, cwd: Path, creates: bool = False,
           word: Word | None = None) -> bool:
    compiled = compile_path_pattern(rule)
    path = word if word is not None else Word(pattern, globby=True)
    return could_name(path_forms(path, [str(cwd)], False), rule_shape(compiled, str(cwd)),
                      compiled, str(cwd), creates)


def test_a_floating_rule_is_compared_by_name(tmp_path: Path) -> None:
    # the command may create files: names alone decide
    assert not _could("*.txt", "**/.env", tmp_path, creates=True)
    assert _could(".e*", "**/.env", tmp_path, creates=True)
    assert _could("*/.en[a-z]", "**/.env", tmp_path, creates=True)
    # it does not: what is there now decides, under where the pattern starts
    assert not _could("*/.en[a-z]", "**/.env", tmp_path)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / ".env").write_text("k\n")
    assert _could("*/.en[a-z]", "**/.env", tmp_path)
    everything = Word("x", dynamic=True, pattern="app/**")
    assert _could("", "**/.env", tmp_path, word=everything)
    assert not _could("", "**/.env", tmp_path,
                      word=Word("x", dynamic=True, pattern="src/**"))
    found = Word("x", dynamic=True, pattern="**/*.py")
    assert not _could("", "**/.env", tmp_path, word=found)
    # a directory by the rule's name holds what it names
    (tmp_path / ".env").mkdir()
    assert _could("", "**/.env", tmp_path, word=found)


def test_an_anchored_rule_is_looked_up_under_its_directory(
        tmp_path: Path, as_home: Callable[[Path], None]) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    as_home(home)
    project = tmp_path / "project"
    project.mkdir()
    assert not _could("*.txt", "~/.ssh/**", project)
    assert not _could("../home/.ssh/*.pub", "~/.ssh/**", project)  # nothing there yet
    (home / ".ssh" / "id_rsa.pub").write_text("k\n")
    assert _could("../home/.ssh/*.pub", "~/.ssh/**", project)
    assert not _could("../home/.ssh/*.txt", "~/.ssh/**", project)
    assert _could("../home/.ssh/*.txt", "~/.ssh/**", project, creates=True)
    anywhere = Word("x", dynamic=True, pattern=f"{home}/**/*.pub")
    assert _could("", "~/.ssh/**", project, word=anywhere)
    # .github/workflows does not exist: nothing find selects can be in it
    selected = Word("x", dynamic=True, pattern="**/*.o")
    assert not _could("", ".github/workflows/**", project, word=selected)
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / ".github" / "workflows" / "ci.yml").write_text("x\n")
    assert not _could("", ".github/workflows/**", project, word=selected)
    assert _could("", ".github/workflows/**", project,
                  word=Word("x", dynamic=True, pattern="**/*.yml"))


def test_a_symbolic_link_on_the_way_is_followed(tmp_path: Path,
                                                as_home: Callable[[Path], None]) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("k\n")
    as_home(home)
    project = tmp_path / "project"
    project.mkdir()
    (project / "keys").symlink_to(home / ".ssh")
    assert _could("keys/id_*", "~/.ssh/**", project)
    assert _could("keys/../.ssh/*", "~/.ssh/**", project)  # `..` after a link: its parent
    assert _could("*/../id_*", "~/.ssh/**", project)  # `..` after a pattern: anywhere
