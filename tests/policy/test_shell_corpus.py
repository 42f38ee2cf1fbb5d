"""The shell-bypass corpus, decided and run for real.

Each attack is decided under the review's policy and must be denied; each one is also run
in bash against a temp directory to show the harm is real (so the corpus cannot drift into
forms that do nothing). Benign commands, including ones that mention denied commands, must
not be denied.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from gateway.policy import Policy, decide, load_policy
from gateway.types import ToolCall

from .shell_corpus import ATTACKS, BENIGN, REVIEW_POLICY, Attack

_GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]


@pytest.fixture(scope="module")
def review_policy(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    path = tmp_path_factory.mktemp("review") / "org.yaml"
    path.write_text(REVIEW_POLICY, encoding="utf-8")
    return load_policy([str(path)])


def _env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "TMUX_TMPDIR": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "SHELL": "/bin/bash",
    }


def _workdir(tmp_path: Path, attack: Attack) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    (work / "victim").mkdir(parents=True)
    (work / "victim" / "data.txt").write_text("precious\n")
    setup = attack.setup
    if setup.startswith("__push__"):
        _diverged_repo(work, home)
        setup = setup.removeprefix("__push__").lstrip("; ")
    if setup:
        subprocess.run(["bash", "-c", setup], cwd=work, env=_env(home), check=True,
                       capture_output=True, timeout=30)
    return work


def _diverged_repo(work: Path, home: Path) -> None:
    """A clone whose HEAD rewrote the remote's main: only a forced push can land it."""
    env = _env(home)

    def git(*args: str) -> None:
        subprocess.run([*_GIT, *args], cwd=work, env=env, check=True, capture_output=True,
                       timeout=30)

    subprocess.run(["git", "init", "-q", "--bare", str(work.parent / "remote.git")], env=env,
                   check=True, capture_output=True)
    git("init", "-q", "-b", "main", ".")
    git("commit", "-q", "--allow-empty", "-m", "one")
    git("remote", "add", "origin", str(work.parent / "remote.git"))
    git("push", "-q", "origin", "HEAD:main")
    git("commit", "-q", "--amend", "--allow-empty", "-m", "rewritten")


def _sandboxed(root: Path, work: Path, command: str, tty: bool) -> list[str]:
    """argv running `command` in bash in a private mount namespace where only `root` and a
    fresh /tmp are writable: an attack that reaches outside its temp directory (a pager
    handed a system path, a glob that escapes) fails on a read-only filesystem instead of
    damaging the machine."""
    run = 'exec script -qec "$3" /dev/null' if tty else 'exec bash -c "$3"'
    script = ('mount --bind "$1" /mnt && mount -t tmpfs tmpfs /tmp && mkdir -p "$1" '
              '&& mount --bind /mnt "$1" && umount /mnt && mount --bind / / '
              f'&& mount -o remount,bind,ro / && cd "$2" && {run}')
    return ["unshare", "--mount", "--propagation", "private", "bash", "-c", script, "sandbox",
            str(root), str(work), command]


@functools.cache
def _sandbox_works() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                            "[ -d /mnt ] && mount --bind / / && mount -o remount,bind,ro / && "
                            "! touch /.agent-gateway-probe 2>/dev/null"], capture_output=True)
    return probe.returncode == 0


def _remote_main(work: Path) -> str:
    found = subprocess.run(["git", "--git-dir", str(work.parent / "remote.git"), "rev-parse",
                            "main"], capture_output=True, text=True)
    return found.stdout.strip()


def _harmed(attack: Attack, work: Path) -> bool:
    if attack.harm == "rm":
        return not (work / "victim").exists()
    if attack.harm == "curl":
        return (work / "stolen").exists()
    if attack.harm == "chmod":
        return (work / "victim" / "data.txt").stat().st_mode & 0o777 == 0o777
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True,
                          text=True).stdout.strip()
    return _remote_main(work) == head


def _id(attack: Attack) -> str:
    return f"{attack.family}:{attack.command[:60]}"


def test_corpus_size_and_families() -> None:
    assert len(ATTACKS) >= 250
    assert len(BENIGN) >= 80
    assert len({a.command for a in ATTACKS}) == len(ATTACKS)
    assert not {a.command for a in ATTACKS} & set(BENIGN)
    families = Counter(a.family for a in ATTACKS)
    for family in ("dashdash", "optional-args", "shell-string", "wrapper", "shell-input",
                   "expanded-options", "builtin-eval", "parse", "program-code", "force-push",
                   "alias-function", "unknown-wrapper"):
        assert families[family] >= 2, family


@pytest.mark.parametrize("attack", ATTACKS, ids=_id)
def test_attack_is_denied(review_policy: Policy, attack: Attack, tmp_path: Path) -> None:
    work = _workdir(tmp_path, attack)
    decision = decide(review_policy, ToolCall("Bash", {"command": attack.command},
                                              cwd=str(work)))
    assert decision.kind == "deny", (attack.command, decision)
    assert decision.reason


@pytest.mark.parametrize("attack", ATTACKS, ids=_id)
def test_attack_really_harms_in_bash(attack: Attack, tmp_path: Path) -> None:
    """Proof that the form is a real bypass, not a typo the policy gets credit for."""
    if attack.not_run:
        pytest.skip(f"not run here: {attack.not_run}")
    if not _sandbox_works():
        pytest.skip("no private mount namespace here (unshare --mount as root): attacks are "
                    "only ever run with the filesystem outside the temp directory read-only")
    missing = [p for p in attack.needs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed on this machine")
    work = _workdir(tmp_path, attack)
    env = _env(tmp_path / "home")
    try:
        subprocess.run(_sandboxed(tmp_path, work, attack.command, attack.tty), cwd=work,
                       env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
    finally:
        if "tmux" in attack.command:
            subprocess.run(["tmux", "kill-server"], env=env, capture_output=True)
    assert _harmed(attack, work), attack.command


@pytest.mark.parametrize("command", BENIGN)
def test_benign_command_is_not_denied(review_policy: Policy, command: str,
                                      tmp_path: Path) -> None:
    decision = decide(review_policy, ToolCall("Bash", {"command": command}, cwd=str(tmp_path)))
    assert decision.kind != "deny", (command, decision)
