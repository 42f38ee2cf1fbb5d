"""Which programs are interpreters, and the language each one runs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

INTERPRETERS: Mapping[str, str] = MappingProxyType({
    "python": "python", "python3": "python", "pypy3": "python", "ipython": "python",
    "ipython3": "python", "python2": "python2", "pypy": "python2",
    "perl": "perl", "perl6": "raku", "raku": "raku",
    "ruby": "ruby", "jruby": "ruby", "truffleruby": "ruby", "irb": "ruby",
    "node": "javascript", "nodejs": "javascript", "deno": "javascript", "bun": "javascript",
    "php": "php",
    "lua": "lua", "luajit": "lua",
    "osascript": "applescript",
    "rscript": "r", "r": "r",
    "julia": "julia",
    # Languages this module has no analysis for: any program text in them is unparseable.
    "tclsh": "tcl", "wish": "tcl", "expect": "tcl",
    "pwsh": "powershell", "powershell": "powershell",
    "guile": "scheme", "racket": "scheme",
    "sbcl": "lisp", "clisp": "lisp",
    "elixir": "elixir", "erl": "erlang",
    "groovy": "groovy", "jshell": "java",
})
"""Program name (lower case, no directory) -> language. Versioned names are found by
`language_of`: python3.12, pypy3.10, perl5.36.0, ruby3.2, php8.2, lua5.4, node18, luajit-2.1."""

OPAQUE_LANGUAGES = frozenset(
    {"tcl", "powershell", "scheme", "lisp", "elixir", "erlang", "groovy", "java", "raku"}
)

_VERSIONED = re.compile(
    r"(?P<base>[a-z]+?)-?\d+(?:\.\d+)*(?:[a-z]|-beta\d*|-alpha\d*|-rc\d*|-dbg|-debug)?"
)


def program_name(program: str) -> str:
    """/usr/bin/Python3.12 -> python3.12."""
    return program.rstrip("/").rsplit("/", 1)[-1].lower()


def interpreter_base(program: str) -> str | None:
    """The INTERPRETERS key a program name stands for (python3.12 -> python3), or None."""
    name = program_name(program)
    if name in INTERPRETERS:
        return name
    match = _VERSIONED.fullmatch(name)
    if match is None:
        return None
    base = match["base"]
    digits = name[len(base):].lstrip("-")
    for candidate in (base + digits[:1], base):  # python3.12 -> python3, then python
        if candidate in INTERPRETERS:
            return candidate
    return None


def language_of(program: str) -> str | None:
    """The language `program` runs, or None when it is not an interpreter known here."""
    base = interpreter_base(program)
    return INTERPRETERS[base] if base is not None else None
