"""Interpreter one-liners: what `python -c`, `perl -e`, `node -e`, ... run, read and write.

Two pure functions over plain values:

    inline_code(program: str, args: Sequence[Word]) -> InlineCode | None
        Where an interpreter invocation takes its program from: the text given in its
        arguments (`source`, with `dynamic` when part of it is a run-time expansion), stdin
        (`from_stdin`), or a file (`script_path`, which the caller treats as a read of that file
        and decides by the interpreter's name), plus what its options load (`loads`), read and
        write (perl/ruby -n, -p, -i), and `unparseable` when the argv itself cannot be known.
        None when the invocation runs no program of its own: not an interpreter, a query
        (`--version`), a module (`python -m pip ...`: `InlineCode.module` is set instead when
        a module runs, and that is decided by the interpreter's name), a package script
        (`deno task`, `node --run`, `bun run NAME`: decided by name, like `npm run`), or another
        tool of the same program (`deno fmt`, `bun install`).

    analyse_code(language: str, source: str) -> CodeEffects
        What a program does: argv of the processes it starts (`commands`, analysed like simple
        commands, wrappers and shells included), shell strings it runs (`scripts`, Bash source
        to scan), files it reads and writes, and `unparseable` with the reason when it cannot be
        known. Python is parsed with `ast`; javascript (node, deno, bun), ruby, perl, php and
        lua with tree-sitter; applescript (osascript, JXA), r and julia are searched for
        constructs; `bash` (from `bun exec`) comes back as one script; any other language's
        code is unparseable.

Every command and script inherits the interpreter's stdin unless the code feeds it, in which
case it comes back as a script with a here-string (`sh <<< 'text'`, or `"$py_value"` for text
computed at run time). Network access comes back as a `curl URL` command so that rules on curl
and on domains apply to it. File operations the code performs itself come back as the
equivalent command too (`shutil.rmtree(p)` is `rm -r -f -- p`, `os.remove(p)` is `rm -- p`;
the `--` keeps a path that begins with '-' a path). See docs/interpreters.md.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from gateway.policy.shell.interp.programs import INTERPRETERS, OPAQUE_LANGUAGES, language_of

if TYPE_CHECKING:
    from gateway.policy.shell.interp.effects import CodeEffects, InlineCode
    from gateway.policy.shell.interp.invocation import inline_code

MAX_SOURCE = 256 * 1024
"""Programs larger than this are unparseable, like a shell command over the scanner's cap."""
MAX_PYTHON_SOURCE = 64 * 1024
"""Python programs larger than this are unparseable: building the tree of dense code costs
about 1.5 ms per KiB here, and a decision has to stay within its time budget."""
MAX_PARSED_SOURCE = 64 * 1024
"""Likewise for the languages parsed with tree-sitter (javascript, ruby, perl, php, lua)."""
_PARSED = {"javascript": "javascript", "ruby": "ruby", "perl": "perl", "php": "php", "lua": "lua"}


def analyse_code(language: str, source: str) -> CodeEffects:
    """What `source`, a program in `language` (an INTERPRETERS value), does. Never raises."""
    from gateway.policy.shell.interp.effects import CodeEffects

    limit = (MAX_PYTHON_SOURCE if language in ("python", "python2") else
             MAX_PARSED_SOURCE if language in _PARSED else MAX_SOURCE)
    if len(source) > limit:
        return CodeEffects(unparseable=f"{language} program longer than {limit // 1024} KiB "
                                       "is not analysed")
    # Imported on first use: most commands run no interpreter, and the hook starts cold.
    enabled = gc.isenabled()
    gc.disable()  # collections would rescan every node of a large tree, again and again
    try:
        if language in ("python", "python2"):
            from gateway.policy.shell.interp.python import analyse_python

            return analyse_python(source, python2=language == "python2")
        if language == "bash":
            return CodeEffects(scripts=(source,))
        if language in _PARSED:
            return _analyse_parsed(language, source)
        from gateway.policy.shell.interp.keyword_tables import TABLES
        from gateway.policy.shell.interp.keywords import analyse_keywords

        table = TABLES.get(language)
        if table is None:
            return CodeEffects(unparseable=f"{language} code is not analysed")
        return analyse_keywords(table, source)
    except RecursionError:
        return CodeEffects(unparseable=f"{language} program nested too deeply to analyse")
    except Exception as exc:  # a bug here must deny, never let the command through
        return CodeEffects(unparseable=f"{language} program not analysed: internal error {exc!r}")
    finally:
        if enabled:
            gc.enable()


def _analyse_parsed(language: str, source: str) -> CodeEffects:
    if language == "lua":
        from gateway.policy.shell.interp.lua import analyse_lua

        return analyse_lua(source)
    if language == "javascript":
        from gateway.policy.shell.interp.javascript import analyse_javascript

        return analyse_javascript(source)
    if language == "ruby":
        from gateway.policy.shell.interp.ruby import analyse_ruby

        return analyse_ruby(source)
    if language == "php":
        from gateway.policy.shell.interp.php import analyse_php

        return analyse_php(source)
    from gateway.policy.shell.interp.perl import analyse_perl

    return analyse_perl(source)


def __getattr__(name: str) -> object:
    # Loaded on first use: the scanner imports this package for every Bash command, and most
    # run no interpreter.
    if name == "inline_code":
        from gateway.policy.shell.interp.invocation import inline_code

        return inline_code
    if name in ("CodeEffects", "InlineCode"):
        from gateway.policy.shell.interp import effects

        return getattr(effects, name)
    raise AttributeError(name)


__all__ = ["INTERPRETERS", "OPAQUE_LANGUAGES", "CodeEffects", "InlineCode", "analyse_code",
           "inline_code", "language_of"]
