"""What an analyser found a program does, as the CodeEffects it reports: one epilogue for
every language, so that the environment and the directory a program sets for the processes it
starts are applied the same way."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Protocol

from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.values import Value, concat, to_bash, to_word
from gateway.policy.shell.words import Word


class Found(Protocol):
    """The analyser's findings (its emitting class holds these)."""

    commands: list[tuple[Word, ...]]
    scripts: list[str]
    reads: list[Word]
    writes: list[Word]
    problem: str
    env: list[tuple[str, Value]]
    env_problem: str
    chdir: bool
    plumbing: str
    """Why what the started programs read on stdin is unknown (descriptors rewired), or ''."""


def settle(found: Found, fail: Callable[[str], None]) -> CodeEffects:
    """The effects, with the programs' environment as an `env` prefix and, after a change of
    directory, relative paths as unknown ones; `fail` records why they cannot be known."""
    runs = bool(found.commands or found.scripts)
    if runs and found.plumbing:
        fail(f"{found.plumbing}: what the programs it starts read is unknown")
    if runs and found.env_problem:
        fail(found.env_problem)
    if runs and found.env:
        prefix = [Word("env"), *(to_word(concat((f"{k}=",), v)) for k, v in found.env)]
        found.commands = [(*prefix, *c) for c in found.commands]
        assigns = " ".join(to_bash(concat((f"{k}=",), v)) for k, v in found.env)
        found.scripts = [f"env {assigns} sh -c {shlex.quote(s)}" for s in found.scripts]
    if found.chdir:
        found.commands = [(c[0], *(uncertain(w) for w in c[1:])) for c in found.commands]
        found.reads = [uncertain(w) for w in found.reads]
        found.writes = [uncertain(w) for w in found.writes]
        found.scripts = [f'cd -- "$py_value" && {{ {s}\n}}' for s in found.scripts]
    return CodeEffects(tuple(found.commands), tuple(found.scripts), tuple(found.reads),
                       tuple(found.writes), found.problem)


def uncertain(word: Word) -> Word:
    """After a change of directory a relative path names an unknown file."""
    if word.text.startswith(("/", "~")) or word.dynamic:
        return word
    return Word(word.text, dynamic=True, lead_dynamic=word.lead_dynamic, globby=word.globby)
