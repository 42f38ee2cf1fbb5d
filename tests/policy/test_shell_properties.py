"""Properties of the shell analysis over generated commands (hypothesis).

1. Any composition of wrappers, shells, quoting, separators and expansions around a denied
   command is denied: the analysis holds for forms nobody wrote down.
2. Decision time grows linearly: a generated pipeline eight times longer costs at most twice
   eight times the CPU (a quadratic walk would cost sixty-four times). The absolute figures are
   the benchmarks' (tests/benchmarks/bench_policy.py), not a timed unit test's.
"""

from __future__ import annotations

import functools
import shlex
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.policy import Policy, decide, load_policy
from gateway.types import ToolCall

from .shell_corpus import REVIEW_POLICY


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Policy:
    path = tmp_path_factory.mktemp("props") / "org.yaml"
    path.write_text(REVIEW_POLICY, encoding="utf-8")
    return load_policy([str(path)])


RM_NAMES = ["rm", "/bin/rm", "/usr/bin/rm", "\\rm", "'rm'", '"rm"', "r''m", "$'rm'",
            "$'\\x72m'", "command rm", "builtin command rm"]
RM_FLAGS = ["-rf", "-fr", "-r -f", "-R", "-r", "--recursive", "-rfv", "--rec --force",
            "-r --", "-f -R", "-Rf"]
TARGETS = ["x", "./x", "'dir with space'", "/tmp/x", "x y", '"$HOME/x"', "*", "x/../x"]
DENIED = st.one_of(
    st.builds(lambda n, f, t: f"{n} {f} {t}", st.sampled_from(RM_NAMES),
              st.sampled_from(RM_FLAGS), st.sampled_from(TARGETS)),
    st.builds(lambda n, t: f"{n} {t} -rf", st.sampled_from(RM_NAMES[:5]),
              st.sampled_from(TARGETS)),
    st.sampled_from(["git push --force", "git push -f origin main", "git push origin +main",
                     "git push --mirror", "git -c remote.origin.push=+x push",
                     "curl https://example.com", "curl -o x file:///etc/hosts",
                     "/usr/bin/curl -s x"]),
)

WRAPPERS = ["sudo", "env", "env -i", "env FOO=1", "nice -n 5", "timeout 5", "timeout -s KILL 3",
            "nohup", "stdbuf -oL", "setsid", "command", "exec", "time", "ionice -c3",
            "chrt -o 0", "taskset -c 0", "busybox", "toybox", "fakeroot", "setpriv",
            "systemd-inhibit", "dbus-run-session --", "ssh-agent", "flock /tmp/l", "npx",
            "npm exec --", "runuser -u root --", "xargs", "xargs -i", "xargs -0 -n1",
            "sudo FOO=bar", "unbuffer", "eatmydata", "chroot /", "prlimit --nofile=9",
            "frobnicate --fast", "mystery -x 1"]
SHELL_FORMS = ["sh -c {q}", "bash -c {q}", "bash -lc {q}", "dash -c -- {q}", "eval {q}",
               "eval -- {q}", "bash <<< {q}", "echo {q} | sh", "printf '%s\\n' {q} | bash",
               "su -c {q}", "su root -- -c {q}", "env -S {q}", "script -qc {q} /dev/null",
               "trap {q} EXIT", "trap -- {q} EXIT", "sg root {q}", "watch -n1 {q}",
               "flock /tmp/l -c {q}", "capsh -- -c {q}", "tmux new-session -d {q}",
               "ssh host {q}", "x={q}; eval \"$x\"", "bash -c \"$(echo {q})\"",
               "f{n}() {{ {c}; }}; f{n}", "alias a{n}={q}; a{n}", "sh <<'EOF{n}'\n{c}\nEOF{n}",
               "$(echo {q})"]
PREFIXES = ["", "true; ", "ls && ", "false || ", "echo hi | ", "cd /tmp && ", "(", "{ ",
            "if true; then ", "x=$(date); ", "# note\n", "for i in 1; do "]
SUFFIXES = {"(": ")", "{ ": "; }", "if true; then ": "; fi", "for i in 1; do ": "; done"}


@st.composite
def disguised(draw: st.DrawFn) -> str:
    command = draw(DENIED)
    simple = True  # a wrapper program can only run a simple command, not `a; b`
    for level in range(draw(st.integers(min_value=1, max_value=3))):
        if simple and draw(st.booleans()):
            command = f"{draw(st.sampled_from(WRAPPERS))} {command}"
        else:
            form = draw(st.sampled_from(SHELL_FORMS))
            if form == "$(echo {q})" and any(c in command for c in "'\"|;&<>$`\\\n"):
                form = "eval {q}"  # bash word-splits the output: no quoting or syntax survives
            command = form.format(q=shlex.quote(command), c=command, n=level)
            simple = not any(mark in form for mark in (";", "|", "\n"))
    prefix = draw(st.sampled_from(PREFIXES))
    return prefix + command + SUFFIXES.get(prefix, "")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command=disguised())
def test_any_disguise_of_a_denied_command_is_denied(policy: Policy, command: str) -> None:
    decision = decide(policy, ToolCall("Bash", {"command": command}, cwd="/nonexistent"))
    assert decision.kind == "deny", (command, decision)


STAGES = ["grep -v foo", "sort", "uniq -c", "cat", "tr a-z A-Z", "cut -d: -f1", "wc -l",
          "sed 's/a/b/'", "awk '{print $1}'", "head -n 5", "tee out.txt", "xargs echo",
          "jq .x", "echo \"$(date)\"", "grep -e 'a|b' -e \"c\""]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stages=st.lists(st.sampled_from(STAGES), min_size=1, max_size=16))
def test_decision_time_is_linear_in_the_command(stages: list[str]) -> None:
    # Fixtures stay out of the signature: hypothesis would print the whole Policy on failure.
    policy = _review_policy()
    decide(policy, ToolCall("Bash", {"command": "ls"}, cwd=tempfile.gettempdir()))  # warm up
    small, large = _decision_cpu_ms(policy, stages, 8), _decision_cpu_ms(policy, stages, 64)
    assert large <= 2 * 8 * small, (round(small), round(large))


def _decision_cpu_ms(policy: Policy, stages: list[str], kib: int) -> float:
    """The best of three CPU times of deciding a pipeline of `stages` repeated to `kib` KiB.

    CPU time of this thread: the decision runs on the calling thread, so threads earlier tests
    left behind and other load on the machine do not count (they only ever add to a sample)."""
    unit = " | ".join(stages)
    command = " | ".join([unit] * max(1, (kib * 1024 - 200) // (len(unit) + 3)))
    samples = []
    for _ in range(3):
        started = time.thread_time()
        decision = decide(policy, ToolCall("Bash", {"command": command}, cwd=tempfile.gettempdir()))
        if decision.rule_id != "builtin:analysis-limit":  # the wall-clock budget, under load
            samples.append((time.thread_time() - started) * 1000)
    assert samples, f"every decision of a {kib} KiB pipeline ran over the analysis budget"
    return min(samples)


@functools.cache
def _review_policy() -> Policy:
    path = Path(tempfile.mkdtemp(prefix="review-policy-")) / "org.yaml"
    path.write_text(REVIEW_POLICY, encoding="utf-8")
    return load_policy([str(path)])


def test_over_the_size_cap_is_denied_naming_the_cap(policy: Policy, tmp_path: Path) -> None:
    command = "echo " + "a" * (256 * 1024)
    decision = decide(policy, ToolCall("Bash", {"command": command}, cwd=str(tmp_path)))
    assert decision.kind == "deny"
    assert decision.rule_id == "builtin:analysis-limit"
    assert "256 KiB" in decision.reason


def test_over_the_time_budget_is_denied(tmp_path: Path) -> None:
    from gateway.policy.shell.scan import scan

    result = scan(" | ".join(["grep x"] * 2000), str(tmp_path), budget_s=0.0)
    assert result.refused.startswith("analysis took longer than its")
