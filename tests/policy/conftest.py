from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.policy import Policy, load_policy
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
