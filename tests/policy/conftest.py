from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.policy import Policy, load_policy
from gateway.policy.paths import deciding
from gateway.types import ToolCall

WritePolicy = Callable[..., str]


@pytest.fixture
def write_policy(tmp_path: Path) -> WritePolicy:
    def write(text: str, name: str = "org.yaml") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def policy_from(write_policy: WritePolicy) -> Callable[..., Policy]:
    def build(*texts: str) -> Policy:
        names = ("org.yaml", "team.yaml", "project.yaml", "extra.yaml")
        return load_policy([write_policy(t, n) for t, n in zip(texts, names, strict=False)])

    return build


def bash(command: str, **extra: Any) -> ToolCall:
    return ToolCall("Bash", {"command": command}, cwd=extra.pop("cwd", "/srv/project"), **extra)


def tool(name: str, cwd: str = "/srv/project", **tool_input: Any) -> ToolCall:
    return ToolCall(name, tool_input, cwd=cwd)


@pytest.fixture
def as_home() -> Iterator[Callable[[Path], None]]:
    """`~` stands for the given directory in what the test calls below `decide` (a
    decision is handed its home on the ToolCall; the evaluator reads no $HOME)."""
    with contextlib.ExitStack() as stack:
        yield lambda home: stack.enter_context(deciding({"HOME": str(home)})) and None
