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
from tests.fixtures.precision import platform_policy

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


# -- attacks run in a real bash (test_shell_precision.py, test_shell_outcomes.py) ------------
SECRET = "top-secret-value"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("home")
    (root / ".ssh").mkdir()
    (root / ".ssh" / "id_rsa").write_text(f"{SECRET}-ssh\n")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / ".env").write_text(f"KEY={SECRET}\n")
    (root / "app").mkdir()
    (root / "app" / ".env").write_text(f"DB={SECRET}\n")
    (root / "a.txt").write_text("a\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print(1)\n")
    return root


@pytest.fixture
def in_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The decision sees the same home directory as the bash that runs the attack."""
    monkeypatch.setenv("HOME", str(home))
    for name in ("f", "g", "d", "Q"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Policy:
    """The platform policy without the OS sandbox: what the hook alone must hold."""
    path = tmp_path_factory.mktemp("policy") / "org.yaml"
    path.write_text(platform_policy(sandbox=False), encoding="utf-8")
    return load_policy([str(path)])
