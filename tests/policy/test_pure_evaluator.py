"""The evaluator is a pure function of the compiled policy, the call and what is on disk: it
reads no environment (the shell hands it one on the ToolCall) and keeps nothing from one
decision to the next but what belongs to the policy."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import gateway.policy.evaluate
from gateway.policy import Policy, load_policy
from gateway.policy.evaluate import decide
from gateway.types import ToolCall

POLICY = """\
version: 1
default: abstain
permissions:
  deny:
    - "Read(~/.ssh/**)"
    - "Read(**/.env)"
    - "Edit(/config/**)"
    - "Bash(rm -rf *)"
    - "Bash(curl *)"
  ask:
    - "Read(~/notes/**)"
"""

PROBES = [
    ("Read", {"file_path": "~/.ssh/id_rsa"}),
    ("Read", {"file_path": "HOME/.ssh/id_rsa"}),
    ("Read", {"file_path": "HOME/notes/a.txt"}),
    ("Read", {"file_path": "project/.env"}),
    ("Edit", {"file_path": "project/config/app.yaml", "old_string": "a", "new_string": "b"}),
    ("Bash", {"command": "cat ~/.ssh/id_rsa"}),
    ("Bash", {"command": "cat $HOME/.ssh/id_rsa"}),
    ("Bash", {"command": "cat \"$SECRET_DIR/id_rsa\""}),
    ("Bash", {"command": "cd ~ && cat .ssh/*"}),
    ("Bash", {"command": "ls && cat linked.txt"}),
    ("Bash", {"command": "cat *.env; git status"}),
    ("Bash", {"command": "rm -rf build && echo done"}),
]
"""Calls whose answer depends on the home directory, the environment, symlinks, hard links,
globs and the working directory."""


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
          ) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    # The gateway's own files, which the built-in rules protect, in small directories: where
    # other names of a hard-linked file are searched for includes them.
    monkeypatch.setenv("HOME", str(tmp_path / "account"))
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "gateway-home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("k\n")
    (home / "notes").mkdir()
    project.mkdir()
    (project / ".env").write_text("SECRET=1\n")
    (project / "linked.txt").hardlink_to(home / ".ssh" / "id_rsa")
    (tmp_path / "org.yaml").write_text(POLICY)
    environ = {"HOME": str(home), "SECRET_DIR": str(home / ".ssh"), "PATH": "/usr/bin:/bin"}
    yield tmp_path, project, environ


def _probes(root: Path, project: Path, environ: dict[str, str]) -> list[ToolCall]:
    def placed(value: object) -> object:
        text = str(value).replace("HOME/", environ["HOME"] + "/")
        return text.replace("project/", str(project) + "/")
    return [ToolCall(tool, {k: placed(v) for k, v in args.items()},  # type: ignore[misc]
                     cwd=str(project), environ=environ) for tool, args in PROBES]


def _answers(policy: Policy, calls: list[ToolCall]) -> list[list[str]]:
    return [[d.kind, d.rule_id, d.reason] for d in (decide(policy, c) for c in calls)]


FRESH = """
import json, sys
from gateway.policy import load_policy
from gateway.policy.evaluate import decide
from gateway.types import ToolCall
spec = json.load(sys.stdin)
policy = load_policy([spec["policy"]])
calls = [ToolCall(t, a, cwd=spec["cwd"], environ=spec["environ"]) for t, a in spec["calls"]]
print(json.dumps([[d.kind, d.rule_id, d.reason] for d in (decide(policy, c) for c in calls)]))
"""


def test_a_decision_does_not_depend_on_the_ones_before_it(
    world: tuple[Path, Path, dict[str, str]],
) -> None:
    root, project, environ = world
    calls = _probes(root, project, environ)
    spec = {"policy": str(root / "org.yaml"), "cwd": str(project), "environ": environ,
            "calls": [[c.tool_name, dict(c.tool_input)] for c in calls]}
    fresh = subprocess.run([sys.executable, "-c", FRESH], input=json.dumps(spec), text=True,
                           capture_output=True, check=True, timeout=120)
    # (the same process environment: the built-in rules the policy loads with protect the
    # gateway's own files, which env.py finds there)
    expected = json.loads(fresh.stdout)
    assert [kind for kind, *_ in expected].count("deny") >= 8, expected

    policy = load_policy([str(root / "org.yaml")])
    other_homes = [{"HOME": f"/home/u{n}", "SECRET_DIR": f"/srv/s{n}"} for n in range(7)]
    for n in range(10_000):  # other homes, environments and working directories
        environ_n = other_homes[n % 7]
        cwd = str(project) if n % 50 == 0 else f"/srv/w{n % 300}"
        call = (ToolCall("Read", {"file_path": f"~/.ssh/k{n % 11}"}, cwd=cwd, environ=environ_n)
                if n % 3 == 0 else
                ToolCall("Bash", {"command": f"cat $SECRET_DIR/f{n % 5} ~/x{n % 13}"},
                         cwd=cwd, environ=environ_n)
                if n % 3 == 1 else
                ToolCall("Read", {"file_path": f"w{n % 17}/.env"}, cwd=cwd))
        decide(policy, call)
    assert _answers(policy, calls) == expected


class _NoEnvironment(dict[str, str]):
    """os.environ for the duration of a decision: any read is a failure."""

    def _refuse(self, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"the evaluator read the environment {args!r}")

    __getitem__ = __contains__ = get = __iter__ = __len__ = keys = items = copy = _refuse  # type: ignore[assignment]


def test_the_evaluator_reads_no_environment(
    world: tuple[Path, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, project, environ = world
    policy = load_policy([str(root / "org.yaml")])  # loading may read it (env.py): not deciding
    calls = _probes(root, project, environ)
    expected = _answers(policy, calls)
    assert expected[0][0] == expected[5][0] == expected[6][0] == expected[7][0] == "deny"
    monkeypatch.setattr(os, "environ", _NoEnvironment())
    monkeypatch.setattr(os, "getenv", _NoEnvironment()._refuse)
    assert _answers(policy, calls) == expected


def test_a_call_is_decided_in_the_environment_it_was_handed(
    world: tuple[Path, Path, dict[str, str]],
) -> None:
    root, project, environ = world
    policy = load_policy([str(root / "org.yaml")])
    elsewhere = {**environ, "HOME": str(root / "elsewhere"), "SECRET_DIR": "/tmp"}
    key = str(Path(environ["HOME"]) / ".ssh" / "config")  # one name only (no hard link)
    Path(key).write_text("Host *\n")
    for tool, args in (("Read", {"file_path": key}), ("Bash", {"command": f"cat {key}"}),
                       ("Bash", {"command": "cat $SECRET_DIR/config"})):
        here = ToolCall(tool, args, cwd=str(project), environ=environ)  # type: ignore[arg-type]
        there = ToolCall(tool, args, cwd=str(project), environ=elsewhere)  # type: ignore[arg-type]
        assert decide(policy, here).kind == "deny", args
        assert decide(policy, there).kind != "deny", args


EVALUATOR = Path(gateway.policy.evaluate.__file__).parent
LOAD_TIME = {"builtin.py", "protected.py"}
"""Build the self-protection rules when the policy loads, from the gateway's own paths."""


def _reads_environment(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.value.id == "os" and node.attr in ("environ", "environb", "getenv")):
            found.append(f"os.{node.attr}:{node.lineno}")
        if isinstance(node, ast.Attribute) and node.attr == "expanduser":
            found.append(f"expanduser:{node.lineno}")
        if isinstance(node, ast.ImportFrom) and node.module == "gateway.env":
            found.append(f"gateway.env:{node.lineno}")
    return found


def _decision_modules() -> list[Path]:
    """The modules of gateway.policy that evaluate.py imports, directly or not (the
    self-protection rules' builders run when the policy loads, not when it decides)."""
    root = EVALUATOR.parent.parent
    seen: set[Path] = set()
    pending = [EVALUATOR / "evaluate.py"]
    while pending:
        path = pending.pop()
        if path in seen or path.name in LOAD_TIME:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "gateway.policy"):
                names = [str(node.module), *(f"{node.module}.{a.name}" for a in node.names)]
                for name in names:
                    base = root / name.replace(".", "/")
                    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                        if candidate.is_file():
                            pending.append(candidate)
    return sorted(seen)


def test_no_evaluator_module_reads_the_environment() -> None:
    assert len(_decision_modules()) > 30
    readers = {str(p.relative_to(EVALUATOR)): r for p in _decision_modules()
               if (r := _reads_environment(p))}
    assert not readers, readers
