"""Hot reload keeps the last good policy after a bad edit and logs the error."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from gateway.errors import PolicyError
from gateway.policy import decide
from gateway.policy.reload import PolicyHolder

from .conftest import bash


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _write(path: Path, text: str, stamp: int) -> None:
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(stamp, stamp))  # distinct mtimes even within one clock tick


def test_reload_and_bad_edit(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "org.yaml"
    _write(path, "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n", 1_000_000_000)
    clock = Clock()
    holder = PolicyHolder([str(path)], interval_s=1.0, clock=clock)
    assert decide(holder.current(), bash("rm x")).kind == "deny"

    _write(path, "version: 1\npermissions:\n  deny: ['Bash(curl:*)']\n", 2_000_000_000)
    assert decide(holder.current(), bash("curl x")).kind == "abstain"  # not re-checked yet
    clock.now = 1.5
    assert decide(holder.current(), bash("curl x")).kind == "deny"
    assert decide(holder.current(), bash("rm x")).kind == "abstain"

    _write(path, "version: 1\npermissions:\n  deny: ['Bash(curl:*)'\n", 3_000_000_000)
    clock.now = 3.0
    with caplog.at_level(logging.ERROR, logger="gateway.policy"):
        policy = holder.current()
    assert decide(policy, bash("curl x")).kind == "deny"  # last good policy stays
    assert holder.last_error is not None
    assert f"{path}:3: invalid YAML" in caplog.text

    _write(path, "version: 1\npermissions:\n  deny: ['Bash(wget:*)']\n", 4_000_000_000)
    clock.now = 4.5
    assert decide(holder.current(), bash("wget x")).kind == "deny"
    assert holder.last_error is None


def test_first_load_must_succeed(tmp_path: Path) -> None:
    path = tmp_path / "org.yaml"
    path.write_text("version: 1\nnope: 1\n")
    with pytest.raises(PolicyError):
        PolicyHolder([str(path)])
