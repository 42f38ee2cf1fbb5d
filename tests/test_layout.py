"""The package's layout holds: the map of packages, and which may import which.

Cores (policy, hookio, audit, archive, telemetry, integrity, budgets, tenancy and the shared
leaves) are pure functions over plain values plus their own stores; `handlers`, `runner`, `server`
and `cli` are the shell around them. Checked on the source, statically, so a lazy import (and
one under TYPE_CHECKING) counts too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gateway"
LEAVES = ("errors", "types", "hashchain", "env", "compaction")
_LEAF = frozenset(LEAVES)
CORES = ("policy", "hookio", "audit", "archive", "telemetry", "integrity", "budgets", "tenancy")
SHELL = ("handlers", "runner", "server", "cli")
OTHER = ("scripted",)
"""The scripted Messages API (`agent-gateway scripted-api`)."""

MAY_IMPORT: dict[str, frozenset[str]] = {
    # leaves: one concept each, nothing of the package but other leaves
    **{leaf: _LEAF for leaf in LEAVES},
    "hookio": _LEAF,
    "integrity": _LEAF,
    "telemetry": _LEAF,
    "budgets": _LEAF | {"telemetry"},
    "tenancy": _LEAF | {"budgets"},
    "archive": _LEAF | {"integrity"},
    # the audit log redacts with the archive's rules; the policy is handed in as plain values
    "audit": _LEAF | {"archive", "integrity", "telemetry"},
    # the policy reads the compaction section from the leaf, not from the archive
    "policy": _LEAF | {"hookio", "audit"},
    "scripted": _LEAF,
    # the shells
    "handlers": _LEAF | {"policy", "hookio", "audit", "archive", "telemetry", "integrity"},
    "runner": _LEAF | set(CORES) | {"handlers"},
    "server": _LEAF | set(CORES) | {"handlers", "runner"},
    "cli": _LEAF | set(CORES) | {"handlers", "runner", "server", "scripted"},
}
"""Each package and what it may import. Named by the design: `policy` never imports
`archive`, `audit` never imports `policy`, `runner` never imports `server` (tokens and budgets
are `tenancy`'s, owned by neither shell), no core imports a shell, nothing imports `cli`."""


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _package_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def _imported_packages(path: Path) -> set[str]:
    """The gateway packages (or leaves) a module imports, other than its own."""
    found = {name.split(".")[1] for name in _imports(path) if name.startswith("gateway.")}
    return found - {_package_of(path)}


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


_MODULES = sorted(p for p in PACKAGE.rglob("*.py")
                  if p.parent != PACKAGE or p.name not in ("__init__.py", "__main__.py"))
"""`gateway/__init__.py` re-exports the leaves; `gateway/__main__.py` is the entry point."""


def test_the_package_map() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == {*CORES, *SHELL, *OTHER}, sorted(packages)
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top == {"__init__.py", "__main__.py", *(f"{leaf}.py" for leaf in LEAVES)}, sorted(top)
    assert set(MAY_IMPORT) == {*LEAVES, *CORES, *SHELL, *OTHER}


@pytest.mark.parametrize("path", _MODULES, ids=_name)
def test_imports_run_the_stated_way(path: Path) -> None:
    allowed = MAY_IMPORT[_package_of(path)]
    bad = sorted(_imported_packages(path) - allowed)
    assert not bad, f"{_name(path)} imports gateway.{', gateway.'.join(bad)}"


@pytest.mark.parametrize(("importer", "imported"), [
    *((core, shell) for core in (*CORES, *LEAVES) for shell in SHELL),
    ("policy", "archive"), ("audit", "policy"), ("runner", "server"),
    *((package, "cli") for package in (*CORES, *LEAVES, *SHELL, *OTHER) if package != "cli"),
])
def test_named_directions_are_forbidden(importer: str, imported: str) -> None:
    """The directions the design names stay out of the map (so editing the map to let one
    through fails here too)."""
    assert imported not in MAY_IMPORT[importer]


def test_a_wrong_way_import_is_caught(tmp_path: Path) -> None:
    """The check sees lazy and TYPE_CHECKING imports, `import x` and `from x import y`."""
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "import gateway.server.auth\n"
        "if TYPE_CHECKING:\n    from gateway.policy.compiled import Policy\n"
        "def f():\n    from gateway.cli import main\n",
        encoding="utf-8",
    )
    assert {n.split(".")[1] for n in _imports(module) if n.startswith("gateway.")} == {
        "server", "policy", "cli"}


def test_docs_layout_names_every_package_and_only_modules_that_exist() -> None:
    """docs/layout.md's map: each package under gateway/ is in it, and each `name.py` it
    names (with its package or a unique name) exists."""
    text = (PACKAGE.parent / "docs" / "layout.md").read_text(encoding="utf-8")
    block = text.split("```text", 1)[1].split("```", 1)[0]
    packages = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("__init__.py")}
    for init in sorted(packages):
        name = init.rsplit("/", 2)[-2] if "/" in init else ""
        if name:
            assert f"{name}/" in block, f"docs/layout.md does not name gateway/{name}/"
    modules = {p.name for p in PACKAGE.rglob("*.py")}
    named = set(re.findall(r"\b([a-z_]+\.py)\b", block))
    assert named, "docs/layout.md names no module"
    missing = sorted(n for n in named if n not in modules)
    assert not missing, f"docs/layout.md names modules that do not exist: {missing}"
