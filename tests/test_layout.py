"""The package's layout holds: the cores never import the shell, and nothing imports the CLI.

Cores (policy, hookio, audit, archive, telemetry, integrity, budgets and the shared leaves) are
pure functions over plain values plus their own stores; `hooks`, `sdk`, `server` and `cli` are
the shell around them. Checked on the source, statically, so a lazy import counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gateway"
CORES = ("policy", "hookio", "audit", "archive", "telemetry", "integrity", "budgets")
LEAVES = ("errors.py", "types.py", "hashchain.py", "env.py")
SHELL = ("gateway.hooks", "gateway.sdk", "gateway.server", "gateway.cli")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _modules(*parts: str) -> list[Path]:
    found: list[Path] = []
    for part in parts:
        target = PACKAGE / part
        found += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    return found


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


@pytest.mark.parametrize("path", _modules(*CORES, *LEAVES), ids=_name)
def test_cores_never_import_the_shell(path: Path) -> None:
    bad = {name for name in _imports(path) if name.startswith(SHELL)}
    assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"


def test_nothing_imports_the_cli() -> None:
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if "cli" not in p.relative_to(PACKAGE).parts[:1] and p.name != "__main__.py"
                 and any(n.startswith("gateway.cli") for n in _imports(p))]
    assert not offenders


def test_the_top_level_holds_only_the_shared_leaves() -> None:
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top == {"__init__.py", "__main__.py", *LEAVES}, sorted(top)
