"""A run's sandbox masks the other names (hard links) of denied files, which the sandbox would
leave readable: found under the session's directory and the rules' own directories; a denied
file with a name elsewhere, or a search over budget, leaves the hook deciding alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.policy import load_policy
from gateway.policy.builtin import Protected
from gateway.policy.compiled import Policy
from gateway.runner import os_sandbox
from gateway.runner.hard_links import linked_names

POLICY = ("version: 1\nsandbox: required\npermissions:\n  deny:\n"
          "    - Read(**/.env)\n    - Read(~/.ssh/**)\n    - Edit(.github/**)\n")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def _policy(tmp_path: Path, text: str = POLICY) -> Policy:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return load_policy([str(path)], Protected(gateway_home=str(tmp_path / "gw")))


def _project(tmp_path: Path) -> Path:
    cwd = tmp_path / "work"
    (cwd / "sub" / "deep").mkdir(parents=True)
    (cwd / ".env").write_text("TOKEN=1\n")
    (cwd / "sub" / ".env").write_text("TOKEN=2\n")
    (cwd / "notes.txt").write_text("notes\n")
    return cwd


def test_finds_every_innocent_name_of_a_denied_file(tmp_path: Path, home: Path) -> None:
    cwd = _project(tmp_path)
    os.link(cwd / ".env", cwd / "sub" / "deep" / "copy.txt")
    os.link(cwd / "sub" / ".env", cwd / "other.txt")
    (home / ".ssh" / "id_test").write_text("key\n")
    os.link(home / ".ssh" / "id_test", cwd / "key.pem")
    os.link(cwd / ".env", cwd / "sub" / "deep" / ".env")  # denied by name already
    os.link(cwd / "notes.txt", cwd / "notes2.txt")  # not a denied file
    found = linked_names(_policy(tmp_path), str(cwd))
    assert found.incomplete == ""
    assert sorted(found.names) == sorted([str(cwd / "sub" / "deep" / "copy.txt"),
                                          str(cwd / "other.txt"), str(cwd / "key.pem")])


def test_no_links_no_names(tmp_path: Path, home: Path) -> None:
    cwd = _project(tmp_path)
    assert linked_names(_policy(tmp_path), str(cwd)).names == ()


def test_a_name_outside_the_searched_directories_is_incomplete(tmp_path: Path,
                                                               home: Path) -> None:
    cwd = _project(tmp_path)
    (tmp_path / "stash").mkdir()
    os.link(cwd / ".env", tmp_path / "stash" / "x")
    found = linked_names(_policy(tmp_path), str(cwd))
    assert "outside the directories searched" in found.incomplete
    assert str(cwd / ".env") in found.incomplete


def test_a_search_over_budget_is_incomplete(tmp_path: Path, home: Path) -> None:
    cwd = _project(tmp_path)
    assert "more than" in linked_names(_policy(tmp_path), str(cwd), budget=3).incomplete


def test_run_masks_them_and_relaxes_the_hook_only_when_all_are_found(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os_sandbox, "unavailable", lambda env: "")
    cwd = _project(tmp_path)
    os.link(cwd / ".env", cwd / "copy.txt")
    policy = _policy(tmp_path)
    run = os_sandbox.run_sandbox(policy, {"HOME": str(home)}, str(cwd))
    assert run.fingerprint == policy.sandbox_fingerprint and run.unrelaxed == ""
    assert str(cwd / "copy.txt") in run.settings["sandbox"]["filesystem"]["denyRead"]

    (tmp_path / "stash").mkdir()
    os.link(cwd / ".env", tmp_path / "stash" / "x")
    run = os_sandbox.run_sandbox(policy, {"HOME": str(home)}, str(cwd))
    assert run.settings["sandbox"]["enabled"] and run.fingerprint == ""
    assert "outside the directories searched" in run.unrelaxed
