"""Whole families of commands a permissive policy must not let through, each shown by its
outcome in a real bash first: `default: allow`, `sandbox: off` and a few denies, so nothing
but the hook's reading of the command stands between the agent and the file.

- a file named through an argument: GNU response files (`@FILE`), an option the program's
  entry lists as reading one;
- a variable that names a program, or where programs are found;
- text piped into a shell that another program starts (find -exec, wrappers that start one
  when given no command, a shell string, run-parts);
- project code written and run by its runner in one command (an npm lifecycle script);
- options of allowed commands that write (`git diff --output F`);
- directories the command reaches another way (CDPATH, /proc/self/cwd), and a carriage
  return after a backslash, which bash and the parser read differently.
Ordinary spellings of the same programs stay allowed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gateway.policy import Policy, load_policy
from tests.policy.conftest import SECRET
from tests.policy.test_shell_precision import _decide, _env

PERMISSIVE = """version: 1
default: allow
sandbox: off
permissions:
  deny: ["Read(**/.env)", "Read(~/.ssh/**)", "Edit(/.github/workflows/**)", "Edit(~/.gitconfig)"]
"""


@pytest.fixture(scope="module")
def permissive(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    path = tmp_path_factory.mktemp("permissive") / "org.yaml"
    path.write_text(PERMISSIVE, encoding="utf-8")
    return load_policy([str(path)])


def _effect(command: str, cwd: Path, home: Path) -> str:
    """What the command prints in a real bash (stderr too: an error message can carry the
    file's content), its stdin closed as Claude Code's Bash tool leaves it."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd, env={**_env(home), "TERM": "xterm"},
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return done.stdout + done.stderr


def _needs(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed here: the effect cannot be shown "
                    "(the decision was asserted first)")


LEAKS = [  # (command, programs it needs, a file to plant first: (name, text))
    ("gcc @.env", ("gcc",), None),
    ("as @.env", ("as",), None),
    ("readelf -a @.env", ("readelf",), None),
    ("ss -a -F .env", ("ss",), None),
    ("GROFF_BIN_PATH=. nroff a.txt", ("nroff",), ("groff", "#!/bin/sh\ncat .env\n")),
    ("printf 'cat .env' | find . -maxdepth 0 -exec /bin/sh \\; -quit", ("find",), None),
    ("(printf 'cat .env\\n'; sleep 1) | script -q /dev/null", ("script",), None),
    ("printf 'cat .env' | setarch -3 /bin/sh", ("setarch",), None),
    ("printf 'cat .env\\n' | timeout 3 watch -x /bin/sh", ("watch",), None),
    ("printf 'cat .env' | run-parts --regex '^sh$' /bin", ("run-parts",), None),
    ("printf 'cat .env' | tar cf /dev/null a.txt --checkpoint=1 --checkpoint-action=exec=sh",
     ("tar",), None),
    ("printf 'cat .env' | socat - exec:sh", ("socat",), None),
    ("printf 'cat .env' | sh -c sh", (), None),
    ("pip config --editor 'cat .env' edit", ("pip",), None),
    ("gcc -wrapper /bin/sh,-c,'cat .env' src/x.c -o /dev/null", ("gcc",),
     ("src/x.c", "int main(void) { return 0; }\n")),
    ("echo '{\"name\":\"x\",\"version\":\"1.0.0\",\"scripts\":{\"preinstall\":\"cat .env\"}}'"
     " > package.json; npm i --offline --no-audit --no-fund", ("npm",), None),
    ("CDPATH=~ cd .ssh && cat id_rsa", (), None),
    ("cd ~ && cat /proc/self/cwd/.ssh/id_rsa", (), None),
    ("echo ok \\\r\ncat .env", (), None),
]


@pytest.mark.parametrize(("command", "programs", "planted"), LEAKS,
                         ids=[c[:48] for c, _, _ in LEAKS])
def test_each_family_is_denied_and_shown_to_leak(
        permissive: Policy, project: Path, in_home: Path, command: str,
        programs: tuple[str, ...], planted: tuple[str, str] | None) -> None:
    if planted is not None:
        target = project / planted[0]
        target.write_text(planted[1])
        target.chmod(0o755)
    decision = _decide(permissive, command, project)
    assert decision in ("deny", "ask"), (command, decision)
    _needs(*programs)
    assert SECRET in _effect(command, project, in_home), command


@pytest.fixture
def repo(project: Path, in_home: Path) -> Path:
    _needs("git")
    workflows = project / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "ci.yml").write_text("on: push\n")
    for step in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", *step], cwd=project, env=_env(in_home), check=True)
    (project / "a.txt").write_text("changed\n")
    return project


@pytest.mark.parametrize("command", [
    "git diff --output .github/workflows/ci.yml",
    "git log -p -1 --output .github/workflows/ci.yml",
    "git show --output .github/workflows/ci.yml",
])
def test_an_output_option_of_git_writes_the_file(
        permissive: Policy, repo: Path, in_home: Path, command: str) -> None:
    before = (repo / ".github/workflows/ci.yml").read_text()
    assert _decide(permissive, command, repo) in ("deny", "ask"), command
    _effect(command, repo, in_home)
    assert (repo / ".github/workflows/ci.yml").read_text() != before, command


@pytest.mark.parametrize("command", [
    "gcc -O2 -o /dev/null src/main.c || true", "ls -la src", "ss -tln",
    "npm test --if-present", "printf 'hello\\n' | grep hello", "printf 'x\\n' | sh -c 'cat'",
    "find . -name '*.py' -exec wc -l {} \\;", "cd src && cat main.py", "git diff --stat",
    "LANG=C sort a.txt", "RUST_LOG=debug ls", "setarch x86_64 uname -m",
    "script -q -c 'echo hi' /dev/null", "printf 'ls\\n' | xargs echo",
])
def test_ordinary_spellings_are_allowed(permissive: Policy, project: Path,
                                        in_home: Path, command: str) -> None:
    assert _decide(permissive, command, project) == "allow", command


def test_a_set_cdpath_makes_a_bare_cd_uncertain_only_when_it_is_set(
        permissive: Policy, project: Path, in_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (in_home / "src").mkdir(exist_ok=True)
    (in_home / "src" / ".env").write_text(f"{SECRET}\n")
    assert _decide(permissive, "cd src && cat .env", project) == "deny"  # .env anywhere
    assert _decide(permissive, "cd src && cat main.py", project) == "allow"
    monkeypatch.setenv("CDPATH", str(in_home))
    assert os.environ["CDPATH"]
    assert _decide(permissive, "cd .ssh && cat id_rsa", project) in ("deny", "ask")


def test_tars_traditional_keys_are_options_not_a_file(
        tmp_path: Path, in_home: Path) -> None:
    """`tar czf x.tgz dir` was read as reading and writing a file named `czf`; its keys are
    the options `-c -z -f x.tgz`, each that takes a value taking the next word."""
    path = tmp_path / "org.yaml"
    path.write_text('version: 1\ndefault: allow\npermissions:\n  deny: ["Read(/czf)", '
                    '"Edit(/czf)", "Edit(/out/**)"]\n')
    policy = load_policy([str(path)])
    assert _decide(policy, "tar czf x.tgz docs", tmp_path) == "allow"
    assert _decide(policy, "tar xzf x.tgz -C build", tmp_path) == "allow"
    assert _decide(policy, "tar czf out/x.tgz docs", tmp_path) == "deny"  # the archive written
    assert _decide(policy, "tar cfC out/x.tgz src .", tmp_path) == "deny"
