"""Hot reload: a policy is loaded whole or not at all. A change is taken once it reads the same
over the settle interval and ends with a newline; one that gives rules up only once it has read
the same for the hold interval, and loudly; a bad edit keeps the last good policy and says why."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from gateway.errors import PolicyError
from gateway.policy import decide
from gateway.policy.reload import HOLD_S, SETTLE_S, PolicyFiles, PolicyHolder

from .conftest import bash

ORG = """\
version: 1
name: org
permissions:
  deny:
    - Bash(rm -rf:*)
    - Read(**/.env)
    - Bash(git push --force:*)
  ask:
    - Bash(git push:*)
"""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _write(path: Path, text: str | bytes, stamp: int) -> None:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    os.utime(path, ns=(stamp, stamp))  # distinct mtimes even within one clock tick


class Setup:
    def __init__(self, tmp_path: Path, text: str = ORG) -> None:
        self.path = tmp_path / "org.yaml"
        self.stamp = 1_000_000_000
        _write(self.path, text, self.stamp)
        self.clock = Clock()
        self.files = PolicyFiles(interval_s=0.1, clock=self.clock)
        self.holder = PolicyHolder([str(self.path)], files=self.files)

    def write(self, text: str | bytes) -> None:
        self.stamp += 1_000_000_000
        _write(self.path, text, self.stamp)

    def at(self, now: float, command: str) -> str:
        self.clock.now = now
        return decide(self.holder.current(), bash(command)).kind


def test_a_change_is_taken_once_it_reads_the_same_over_the_settle_interval(
    tmp_path: Path,
) -> None:
    s = Setup(tmp_path)
    assert s.at(0, "curl x") == "abstain"
    s.write(ORG + "    - Bash(curl:*)\n")  # adds a rule: gives nothing up
    assert s.at(0.25, "curl x") == "abstain"  # first seen
    assert s.at(0.25 + SETTLE_S / 2, "curl x") == "abstain"  # not settled yet
    assert s.at(0.25 + SETTLE_S, "curl x") == "ask"  # (it landed under ask:)
    assert s.holder.last_error is None and s.files.notices() == []


def test_a_file_written_again_meanwhile_starts_settling_again(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.at(0, "ls")
    s.write(ORG + "    - Bash(curl:*)\n")
    s.at(0.25, "curl x")
    s.write(ORG + "    - Bash(curl:*)\n    - Bash(wget:*)\n")
    assert s.at(0.25 + SETTLE_S, "wget x") == "abstain"  # the second text is first seen now
    assert s.at(0.25 + 2 * SETTLE_S, "wget x") == "ask"


@pytest.mark.parametrize("cut", [400, 60, 75, 1])
def test_a_file_cut_short_mid_line_is_never_loaded(tmp_path: Path, cut: int,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The report: org.yaml cut to its first bytes for 3 s validated and was loaded."""
    text = ORG + "".join(f"    - Bash(tool{i}:*)\n" for i in range(30))
    s = Setup(tmp_path, text)
    head = text.encode()[:cut]
    assert not head.endswith(b"\n")
    s.write(head)
    with caplog.at_level(logging.ERROR, logger="gateway.policy"):
        for now in range(1, 60):  # a minute of checks: never loaded
            assert s.at(now, "cat .env") != "abstain" or "Read" not in head.decode()
            assert s.at(now, "git push --force origin main") == "deny"
    assert "does not end with a newline" in str(s.holder.last_error)
    assert caplog.text.count("does not end with a newline") == 1  # said once per change
    s.write(text)  # the writer finishes
    assert s.at(61, "git push --force") == "deny"
    assert s.at(61 + SETTLE_S, "git push --force") == "deny"
    assert s.holder.last_error is None


def test_a_file_cut_at_a_line_end_is_held_then_loaded_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = Setup(tmp_path)
    cut = ORG[: ORG.index("    - Read")]  # ends with a newline, validates, drops two denies
    s.write(cut)
    assert s.at(0.25, "cat .env") == "deny"
    with caplog.at_level(logging.WARNING, logger="gateway.policy"):
        assert s.at(0.25 + SETTLE_S, "cat .env") == "deny"  # settled but gives rules up: held
        ((where, held),) = s.files.notices()
        assert where == str(s.path)
        assert "gives up deny rule 'Read(**/.env)' removed" in held and "held until" in held
        assert "'Bash(git push --force:*)' removed" in held
        assert "ask rule 'Bash(git push:*)' removed" in held
        assert s.at(0.25 + HOLD_S - 0.5, "git push --force") == "deny"
        assert s.at(0.25 + HOLD_S, "cat .env") == "abstain"  # read the same for HOLD_S: taken
    assert "holding it until it reads the same" in caplog.text
    assert "reloaded at" in caplog.text
    assert "GIVING UP deny rule 'Read(**/.env)' removed" in caplog.text
    ((_, notice),) = s.files.notices()  # shown until the file changes again
    assert "GIVING UP" in notice and "Read(**/.env)" in notice
    s.write(ORG)
    s.at(10, "ls")
    assert s.at(10 + SETTLE_S, "cat .env") == "deny"
    assert s.files.notices() == []


def test_a_change_back_to_the_text_in_force_ends_the_wait(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.write(ORG[:50])
    s.at(1, "ls")
    s.at(2, "ls")
    assert s.holder.last_error is not None
    s.write(ORG)  # written again as it was (a new mtime, the same bytes)
    s.at(3, "ls")
    assert s.holder.last_error is None and s.files.notices() == []


def test_a_bad_edit_keeps_the_last_good_policy_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = Setup(tmp_path, "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n")
    s.write("version: 1\npermissions:\n  deny: ['Bash(rm:*)'\n")
    with caplog.at_level(logging.ERROR, logger="gateway.policy"):
        s.at(1, "ls")
        assert s.at(1 + SETTLE_S, "rm x") == "deny"  # the last good policy stays
    assert s.holder.last_error is not None
    assert f"{s.path}:3: invalid YAML" in caplog.text
    s.write("version: 1\npermissions:\n  deny: ['Bash(rm:*)', 'Bash(wget:*)']\n")
    s.at(3, "ls")
    assert s.at(3 + SETTLE_S, "wget x") == "deny"
    assert s.holder.last_error is None


def test_a_vanished_file_keeps_the_last_good_policy(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.path.unlink()
    s.at(1, "ls")
    assert s.at(1 + SETTLE_S, "cat .env") == "deny"
    assert "cannot read policy file" in str(s.holder.last_error)


def test_a_worker_starts_from_the_seed_not_from_a_half_written_file(tmp_path: Path) -> None:
    path = tmp_path / "org.yaml"
    path.write_text(ORG[: ORG.index("    - Read")])  # mid-write as the worker starts
    clock = Clock()
    files = PolicyFiles(seed={str(path): ORG.encode()}, clock=clock)
    holder = PolicyHolder([str(path)], files=files)
    assert decide(holder.current(), bash("cat .env")).kind == "deny"
    path.write_text(ORG)  # the writer finishes: the seed was right
    for now in (1.0, 2.0):
        clock.now = now
        assert decide(holder.current(), bash("cat .env")).kind == "deny"
    assert holder.last_error is None and files.notices() == []


def test_layer_sets_share_the_texts_in_force(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    team = tmp_path / "team.yaml"
    team.write_text("version: 1\npermissions:\n  deny: ['Bash(curl:*)']\n")
    s.write(ORG[: ORG.index("    - Read")])
    s.at(0.25, "ls")
    other = PolicyHolder([str(s.path), str(team)], files=s.files)  # after the cut
    assert decide(other.current(), bash("cat .env")).kind == "deny"  # the org text in force


def test_first_load_must_succeed(tmp_path: Path) -> None:
    path = tmp_path / "org.yaml"
    path.write_text("version: 1\nnope: 1\n")
    with pytest.raises(PolicyError):
        PolicyHolder([str(path)])
    path.write_text("version: 1\n")  # tried again, it reads the file again
    assert PolicyHolder([str(path)]).current().rule_count == 0
