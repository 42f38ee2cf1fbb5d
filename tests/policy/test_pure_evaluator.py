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
from gateway.policy.evaluate import UNION_FROM, decide
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
policy = load_policy(spec["policies"])
calls = [ToolCall(t, a, cwd=spec["cwd"], environ=spec["environ"]) for t, a in spec["calls"]]
print(json.dumps([[d.kind, d.rule_id, d.reason] for d in (decide(policy, c) for c in calls)]))
"""

TEAM = "version: 1\npermissions:\n  deny:\n" + "".join(
    f'    - "Read(~/vault{k}/**)"\n    - "Edit(/generated{k}/**)"\n' for k in range(UNION_FROM))
"""Enough path rules per tool for the evaluator to check them through their unions."""
OTHER = "version: 1\nself_protection: false\npermissions:\n  deny:\n" + "".join(
    f'    - "Read(//srv/area{k}/**)"\n' for k in range(UNION_FROM))
"""Another policy decided with in the same process: its path rules elsewhere, enough of them
for unions, and no built-in layer (its first layer is one of many rules)."""

SPREAD_PROBES = [
    ("Bash", {"command": "echo x > OUTSIDE/settings.yaml"}),  # project/config/app.yaml
    ("Read", {"file_path": "HOME/vault7/key"}),
    ("Edit", {"file_path": "project/generated9/x", "old_string": "a", "new_string": "b"}),
    ("Grep", {"pattern": "k", "path": "HOME/vault3/notes"}),
    ("Bash", {"command": "cat pointer maybe.txt"}),
    ("Read", {"file_path": "project/pointer"}),
    ("Bash", {"command": "cat *.pem"}),
]
"""Calls whose answer depends on the working directory's place among the roots searched for
other names of a file, on a union of many rules, and on the disk as it is now."""
KINDS = ["deny", "deny", "ask", "deny", "deny", "deny", "deny", "deny", "deny", "deny",
         "abstain", "deny", "deny", "deny", "deny", "deny", "abstain", "abstain", "abstain"]
"""The answers of PROBES then SPREAD_PROBES: a cache shared by everything gives wrong ones
even in a fresh process."""


@pytest.fixture
def spread_world(world: tuple[Path, Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
                 ) -> tuple[list[str], Path, dict[str, str], list[ToolCall]]:
    """The world with its files apart: the gateway's state and the policy files (which the
    built-in rules protect, so their directories are searched for other names of a file)
    cover neither the home directory nor the project, so a decision finds the other name
    of a hard-linked file only under the home directory and working directory it was given;
    and files outside both."""
    root, project, environ = world
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(root / "state" / "gateway-home"))
    policies = root / "policies"
    policies.mkdir()
    for name, text in (("org.yaml", POLICY), ("team.yaml", TEAM)):
        (policies / name).write_text(text)
    outside = root / "outside"
    outside.mkdir()
    (project / "config").mkdir()
    (project / "config" / "app.yaml").write_text("a: 1\n")
    (outside / "settings.yaml").hardlink_to(project / "config" / "app.yaml")
    (project / "readme.txt").write_text("hello\n")
    _settle(project)
    placed = [ToolCall(tool, {k: str(v).replace("OUTSIDE/", f"{outside}/")
                              .replace("HOME/", environ["HOME"] + "/")
                              .replace("project/", f"{project}/") for k, v in args.items()},
                       cwd=str(project), environ=environ) for tool, args in SPREAD_PROBES]
    calls = [*_probes(root, project, environ), *placed]
    return [str(policies / "org.yaml"), str(policies / "team.yaml")], project, environ, calls


def _settle(project: Path) -> None:
    """The disk as every checked decision sees it: `pointer` names the readme, `maybe.txt`
    is a file of its own, no `.pem` file."""
    for name in ("pointer", "maybe.txt", "key.pem"):
        (project / name).unlink(missing_ok=True)
    (project / "pointer").symlink_to(project / "readme.txt")
    (project / "maybe.txt").write_text("notes\n")


def _stir(project: Path, environ: dict[str, str]) -> None:
    """The disk as some unrelated decisions see it: `pointer` and `maybe.txt` are other
    names of the private key, and a `.pem` file is there."""
    secret = Path(environ["HOME"]) / ".ssh" / "id_rsa"
    for name in ("pointer", "maybe.txt"):
        (project / name).unlink()
    (project / "pointer").symlink_to(secret)
    (project / "maybe.txt").hardlink_to(secret)
    (project / "key.pem").write_text("k\n")


def _unrelated(n: int, kind: int, policies: tuple[Policy, Policy, Policy], project: Path,
               environ: dict[str, str]) -> None:
    """One of the decisions between two checks. Before the first check none of them is made
    in the probes' home directory *and* working directory: a cache keyed on one of the two
    answers a probe from another's entry."""
    policy, again, other = policies
    another = {"HOME": f"/home/u{n % 7}", "SECRET_DIR": f"/srv/s{n % 5}", "PATH": "/bin"}
    elsewhere = f"/srv/w{n % 300}"
    here = str(project)
    if kind == 0:  # another policy, computing its own indexes
        decide(other, ToolCall("Read", {"file_path": f"/srv/area{n % 64}/k"}, cwd=elsewhere))
        decide(other, ToolCall("Bash", {"command": f"cat ~/x{n % 13} /srv/data{n % 3}"},
                               cwd=elsewhere, environ=another))
    elif kind == 1:  # the probes' working directory, another home
        decide(policy, ToolCall("Bash", {"command": f"cat $SECRET_DIR/f ~/.ssh/k{n % 11} .env"},
                                cwd=here, environ=another))
    elif kind == 2:  # the probes' home, another working directory
        decide(policy, ToolCall("Bash", {"command": f"cat ~/notes/n{n % 5} w{n % 17}/.env"},
                                cwd=elsewhere, environ=environ))
    elif kind == 3:
        decide(policy, ToolCall("Read", {"file_path": f"~/vault{n % 64}/k"}, cwd=elsewhere,
                                environ=another))
    elif kind == 4:
        decide(policy, ToolCall("Edit", {"file_path": f"{elsewhere}/generated{n % 64}/x",
                                         "old_string": "a", "new_string": "b"}, cwd=elsewhere))
    elif kind == 5:
        decide(policy, ToolCall("Grep", {"pattern": "k", "path": f"~/vault{n % 64}"},
                                cwd=elsewhere, environ=another))
    elif kind == 6:
        decide(policy, ToolCall("Bash", {"command": f"cat *.pem k{n % 9}.env"}, cwd=elsewhere,
                                environ=another))
    elif kind == 8:  # the probes' own home and directory, with the disk changed meanwhile
        config = project / "config" / "app.yaml"
        config.unlink()  # outside/settings.yaml is the only name of the settings now
        config.write_text("a: 2\n")
        try:  # (the same rules loaded again: what it works out is its own)
            decide(again, ToolCall("Bash", {"command": "cat linked.txt"}, cwd=here,
                                   environ=environ))
        finally:
            config.unlink()
            config.hardlink_to(project.parent / "outside" / "settings.yaml")
    else:  # the disk changed in between, and changed back (seldom: a hard link is searched)
        _stir(project, environ)
        try:
            decide(policy, ToolCall("Bash", {"command": "cat pointer maybe.txt *.pem"},
                                    cwd=here, environ=another))
            decide(policy, ToolCall("Bash", {"command": f"cat {here}/pointer {here}/maybe.txt"},
                                    cwd=elsewhere, environ=environ))
            decide(policy, ToolCall("Read", {"file_path": f"{here}/pointer"}, cwd=elsewhere,
                                    environ=environ))
        finally:
            _settle(project)


def test_a_decision_does_not_depend_on_the_ones_before_it(
    spread_world: tuple[list[str], Path, dict[str, str], list[ToolCall]], tmp_path: Path,
) -> None:
    paths, project, environ, calls = spread_world
    spec = {"policies": paths, "cwd": str(project), "environ": environ,
            "calls": [[c.tool_name, dict(c.tool_input)] for c in calls]}
    fresh = subprocess.run([sys.executable, "-c", FRESH], input=json.dumps(spec), text=True,
                           capture_output=True, check=True, timeout=120)
    # (the same process environment: the built-in rules the policy loads with protect the
    # gateway's own files, which env.py finds there)
    expected = json.loads(fresh.stdout)
    assert [kind for kind, *_ in expected] == KINDS, expected

    (tmp_path / "other.yaml").write_text(OTHER)
    policy = load_policy(paths)
    everything = (policy, load_policy(paths), load_policy([str(tmp_path / "other.yaml")]))
    # A process's first decisions (what it keeps from them it may keep longest): another
    # policy's, the probes' working directory with another home, then a probe's own call
    # with the disk changed meanwhile.
    for kind in (0, 1, 8):
        _unrelated(0, kind, everything, project, environ)
    for check in range(4):
        for n in range(2_500 * check, 2_500 * (check + 1) - 3):
            _unrelated(n, 7 if n % 500 == 7 else n % 7, everything, project, environ)
        # The last ones before a check: the same call with the disk changed meanwhile, its
        # working directory, then its home (or the reverse).
        for kind in (8, *((1, 2) if check % 2 == 0 else (2, 1))):
            _unrelated(check, kind, everything, project, environ)
        assert _answers(policy, calls) == expected, f"after {2_500 * (check + 1)} decisions"


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


def test_no_policy_module_reads_the_environment_itself() -> None:
    """Loading a policy reads the environment too (the self-protection rules name the
    gateway's own paths and the user's settings), through gateway.env: no module of
    gateway.policy reads it on its own, not even `~` (os.path.expanduser reads HOME)."""
    modules = sorted(EVALUATOR.rglob("*.py"))
    assert len(modules) > 60
    readers = {str(p.relative_to(EVALUATOR)): found for p in modules
               if (found := [r for r in _reads_environment(p) if not r.startswith("gateway.env")])}
    assert not readers, readers
