"""The search for other names of hard-linked files is part of the decision's time budget,
and one walk serves every file a decision names (a pnpm-style node_modules of hard links: a
Bash call naming 60 files walked the tree 60 times, 12 s in one report)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import gateway.policy.paths as paths
from gateway.policy import Policy, decide, load_policy
from gateway.types import ToolCall

POLICY = "version: 1\nunparseable: deny\npermissions:\n  deny:\n    - Read(**/.env)\n" \
         "  allow:\n    - Bash(cat:*)\n"


@pytest.fixture
def node_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose packages are hard links into a store, as pnpm installs them (and a
    small home: the built-in rules' roots include home directories, searched too)."""
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    store = project / "node_modules" / ".pnpm-store"
    store.mkdir(parents=True)
    for n in range(60):
        package = project / "node_modules" / f"pkg{n}"
        package.mkdir()
        (store / f"f{n}").write_text("module.exports = 1\n")
        os.link(store / f"f{n}", package / "index.js")
    return project


@pytest.fixture
def policy(tmp_path: Path) -> Policy:
    path = tmp_path / "org.yaml"
    path.write_text(POLICY)
    return load_policy([str(path)])


def _cat_all(project: Path) -> ToolCall:
    files = " ".join(f"node_modules/pkg{n}/index.js" for n in range(60))
    return ToolCall("Bash", {"command": f"cat {files}"}, cwd=str(project))


def test_one_walk_serves_every_linked_file_of_a_decision(
    node_modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed: list[str] = []
    scandir = os.scandir

    def counting(path: str) -> object:
        listed.append(path)
        return scandir(path)

    monkeypatch.setattr(paths.os, "scandir", counting)
    roots = (str(node_modules),)
    with paths.deciding():
        for n in range(60):
            found = paths.path_targets(f"node_modules/pkg{n}/index.js", str(node_modules),
                                       roots)
            assert found.complete and found.names[-1].endswith(f".pnpm-store/f{n}")
    assert listed.count(str(node_modules / "node_modules")) == 1


def test_past_the_decisions_link_budget_the_rules_cannot_tell(
    node_modules: Path, policy: Policy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(paths, "LINK_SEARCH_BUDGET_S", 0.0)
    decision = decide(policy, _cat_all(node_modules))
    assert decision.kind == "deny" and "could not finish searching" in decision.reason


def test_the_budget_is_the_decisions_not_the_first_ones(node_modules: Path) -> None:
    """Each decision starts its own budget and its own walks."""
    roots = (str(node_modules),)
    with paths.deciding(link_budget_s=0.0):
        assert not paths.path_targets("node_modules/pkg1/index.js", str(node_modules),
                                      roots).complete
    with paths.deciding(link_budget_s=60.0):
        assert paths.path_targets("node_modules/pkg1/index.js", str(node_modules),
                                  roots).complete
