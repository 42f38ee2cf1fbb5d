"""`inline_code`: where an interpreter invocation takes its program from, read from its argv."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from gateway.policy.shell.interp import specs
from gateway.policy.shell.interp.argscan import Scanned, scan
from gateway.policy.shell.interp.effects import InlineCode
from gateway.policy.shell.interp.programs import INTERPRETERS, interpreter_base
from gateway.policy.shell.words import Word

Handler = Callable[[str, Sequence[Word]], "InlineCode | None"]


def inline_code(program: str, args: Sequence[Word]) -> InlineCode | None:
    """How `program args...` gets its program, or None when it runs none of its own: not an
    interpreter, a query (--version, --help), a module (`python -m pip`), a package script
    (`deno task`, `node --run`, `bun run build`) or another tool of the same program
    (`deno fmt`, `bun install`). None means: decide the command by the interpreter's name."""
    base = interpreter_base(program)
    if base is None:
        return None
    language = INTERPRETERS[base]
    handler = _HANDLERS.get(base) or _LANGUAGE_HANDLERS.get(language, _opaque)
    return handler(language, [_settled(w) for w in args])


def _settled(word: Word) -> Word:
    """A word with unquoted glob characters becomes whatever file names match: unknown."""
    if not word.globby:
        return word
    lead = word.lead_dynamic or word.may_be_option  # a file named -e... (scan.settle)
    pattern = word.text if "{" not in word.text and not word.dynamic else ""
    return Word(word.text, dynamic=True, lead_dynamic=lead, globby=True, pattern=pattern,
                plain_names=word.plain_names)


def _code(scanned: Scanned, *options: str) -> tuple[str | None, bool]:
    pieces = scanned.values(*options)
    if not pieces:
        return None, False
    return "\n".join(w.text for w in pieces), any(w.dynamic for w in pieces)


def _generic(language: str, scanned: Scanned, code_options: tuple[str, ...],
             loads: tuple[str, ...] = (), queries: frozenset[str] = frozenset(),
             stdin_options: tuple[str, ...] = (),
             stdin_when_empty: bool = True) -> InlineCode | None:
    """The usual shape: code options, else a script operand, else the program from stdin."""
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    source, dynamic = _code(scanned, *code_options)
    operands = scanned.operands
    interactive = scanned.has(*stdin_options)
    loaded = tuple(scanned.values(*loads))
    if source is not None:
        return InlineCode(language, source, interactive, None, dynamic, loads=loaded,
                          args=operands)
    if scanned.names() & queries:
        return None
    if operands and operands[0].text != "-":
        return InlineCode(language, script_path=operands[0], from_stdin=interactive,
                          loads=loaded, args=operands[1:])
    if not operands and not stdin_when_empty and not interactive:
        return None
    return InlineCode(language, from_stdin=True, loads=loaded, args=operands[1:])


# -- python ------------------------------------------------------------------------------
_ARCHIVE_TOOLS = frozenset({"zipfile", "tarfile"})
_CODE_MODULES = frozenset({"pdb", "cProfile", "profile", "trace", "doctest", "runpy", "idlelib"})


def _python(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.PYTHON, args)
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    operands = scanned.operands
    interactive = scanned.has("-i")
    for name, value in scanned.options:
        if name == "-c":
            if value is None:
                return None  # python refuses: "Argument expected for the -c option"
            return InlineCode(language, value.text, interactive, None, value.dynamic,
                              args=operands)
        if name == "-m":
            return None if value is None else _python_module(language, value, operands)
    if scanned.names() & specs.PYTHON_QUERIES:
        return None
    if operands and operands[0].text != "-":
        return InlineCode(language, script_path=operands[0], from_stdin=interactive,
                          args=operands[1:])
    return InlineCode(language, from_stdin=True, args=operands[1:])


def _python_module(language: str, module: Word, operands: tuple[Word, ...]) -> InlineCode:
    name = module.text
    if module.dynamic:
        why = f"python -m runs a module named at run time: {name}"
        return InlineCode(language, unparseable=why)
    if name == "timeit":  # the statements are Python code
        scanned = scan(specs.TIMEIT, operands)
        if scanned.problem:
            return InlineCode(language, unparseable=f"python -m timeit: {scanned.problem}")
        pieces = [*scanned.values("-s"), *scanned.operands]
        return InlineCode(language, "\n".join(w.text for w in pieces), False, None,
                          any(w.dynamic for w in pieces), module=module)
    if name == "code":
        return InlineCode(language, from_stdin=True, module=module, args=operands)
    if name in _CODE_MODULES or name.startswith("idlelib"):
        return InlineCode(language, module=module, args=operands,
                          unparseable=f"python -m {name} runs code named in its arguments")
    writes: tuple[Word, ...] = ()
    texts = [w.text for w in operands]
    if name in _ARCHIVE_TOOLS and operands:
        if {"-e", "--extract"} & set(texts):
            files = [w for w in operands if not w.text.startswith("-")]
            writes = (files[1] if len(files) > 1 else Word("."),)
        elif {"-c", "--create"} & set(texts):
            files = [w for w in operands if not w.text.startswith("-")]
            writes = tuple(files[:1])
    return InlineCode(language, module=module, args=operands, writes=writes)


# -- perl ----------------------------------------------------------------------------------
_PERL_MODULE = re.compile(r"-?[A-Za-z_][\w:']*(?:=[^\0]*)?", re.S)
_PERL_READS_ARGS = re.compile(r"(?<!<)<(?:ARGV)?>(?!>)|\bARGV\b|\beof\(\)")


def _perl(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.PERL, args)
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    pieces: list[Word] = []
    loads: list[Word] = []
    problem = ""
    for name, value in scanned.options:
        text = value.text if value is not None else ""
        if name in ("-e", "-E") and value is not None:
            pieces.append(value)
        elif name in ("-M", "-m", "-d") and value is not None:
            if name == "-d" and text in ("", "t"):
                continue
            module = text.lstrip("t")[1:] if name == "-d" else text
            if value.dynamic or not module:
                problem = problem or f"perl {name} with a module computed at run time or missing"
            elif _PERL_MODULE.fullmatch(module):
                name_ = re.split(r"[=\s]", module.lstrip("-"), maxsplit=1)[0]
                name_ = f"Devel::{name_}" if name == "-d" else name_
                loads.append(Word(name_))
                pieces.append(Word(f"use {name_};"))  # so the analysis sees IPC::Run and kin
            else:  # perl inserts `use TEXT;` before the program: the text is code
                pieces.append(Word(f"use {module};", dynamic=value.dynamic))
        elif name == "-F" and text:
            pieces.append(Word(f"split({text});", dynamic=value.dynamic if value else False))
    names = scanned.names()
    debugger = any(n == "-d" and (v is None or v.text in ("", "t")) for n, v in scanned.options)
    source = "\n".join(w.text for w in pieces) if pieces else None
    operands = scanned.operands
    if source is None and names & specs.PERL_QUERIES and not operands:
        return None
    script: Word | None = None
    program_args = operands
    from_stdin = debugger
    if source is None:
        if operands and operands[0].text != "-":
            script, program_args = operands[0], operands[1:]
        else:
            from_stdin, program_args = True, operands[1:]
    loop = bool(names & {"-n", "-p", "-a", "-F"})
    magic = loop or (source is not None and _PERL_READS_ARGS.search(source) is not None)
    reads: list[Word] = []
    writes: list[Word] = []
    for arg in program_args:
        problem = problem or _perl_arg(arg, magic, reads, writes)
    if "-i" in names:
        writes.extend(w for w in program_args if w.text != "-")
    if loop:
        reads.extend(w for w in program_args if w.text != "-")
    return InlineCode(language, source, from_stdin, script, any(w.dynamic for w in pieces),
                      loads=tuple(loads), args=program_args, reads=tuple(reads),
                      writes=tuple(writes), unparseable=problem)


def _perl_arg(arg: Word, magic: bool, reads: list[Word], writes: list[Word]) -> str:
    """Perl's <> opens each argument with the two-argument open: 'rm x|' runs rm."""
    text = arg.text.strip()
    if text.startswith("|") or text.endswith("|"):
        return f"perl would run the argument {arg.text!r} as a command"
    if not magic:
        return ""
    if arg.dynamic and not arg.plain_names:
        return f"perl opens an argument computed at run time: {arg.text}"
    if text.startswith((">", "+<", "+>")):
        writes.append(Word(text.lstrip("+<>").strip()))
    elif text.startswith("<"):
        reads.append(Word(text[1:].strip()))
    return ""


# -- ruby ----------------------------------------------------------------------------------
def _ruby(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.RUBY, args)
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    code = _generic(language, scanned, ("-e",), loads=("-r",), queries=specs.RUBY_QUERIES)
    if code is None:
        return None
    names = scanned.names()
    files = tuple(w for w in code.args if w.text != "-")
    return InlineCode(
        code.language, code.source, code.from_stdin, code.script_path, code.dynamic,
        loads=code.loads, args=code.args,
        reads=files if names & {"-n", "-p", "-a", "-F"} else (),
        writes=files if "-i" in names else (),
    )


def _irb(language: str, args: Sequence[Word]) -> InlineCode | None:
    """irb reads Ruby from stdin whatever its options say."""
    libs = [args[i + 1] for i, w in enumerate(args[:-1]) if w.text == "-r"]
    return InlineCode(language, from_stdin=True, loads=tuple(libs))


# -- javascript runtimes -----------------------------------------------------------------
def _node(language: str, args: Sequence[Word]) -> InlineCode | None:
    expanded: list[Word] = []
    for word in args:  # node's one bundled spelling
        expanded.extend([Word("-p"), Word("-e")] if word.text == "-pe" else [word])
    scanned = scan(specs.NODE, expanded)
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    if scanned.has("--run", "--test"):
        return None
    return _generic(language, scanned, ("-e", "-p"), loads=specs.NODE_LOADS,
                    queries=specs.NODE_QUERIES, stdin_options=("-i",))


def _deno(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.DENO, args)
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    if not scanned.operands:
        if scanned.names() & {"-h", "-V", "--help", "--version"}:
            return None
        return InlineCode(language, from_stdin=True)
    command, rest = scanned.operands[0], scanned.operands[1:]
    if command.dynamic:
        return _unknown_subcommand(language, command)
    inner = scan(specs.DENO, rest)
    if inner.problem:
        return InlineCode(language, unparseable=inner.problem)
    loads = tuple(inner.values("--preload"))
    if command.text == "eval":
        if not inner.operands:
            return None
        code = inner.operands[0]
        return InlineCode(language, code.text, False, None, code.dynamic, loads=loads,
                          args=inner.operands[1:])
    if command.text == "repl":
        source, dynamic = _code(inner, "--eval")
        return InlineCode(language, source, True, None, dynamic,
                          loads=(*loads, *inner.values("--eval-file")))
    if command.text in specs.DENO_SUBCOMMANDS:
        return None
    if command.text == "run":
        return _generic(language, inner, (), loads=("--preload",), stdin_when_empty=False)
    return InlineCode(language, script_path=command, args=rest)


def _unknown_subcommand(language: str, command: Word) -> InlineCode:
    return InlineCode(language, unparseable=f"subcommand computed at run time: {command.text}")


def _bun(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.BUN, args)
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    defines = [Word(w.text.replace(":", " = ", 1), dynamic=w.dynamic) for w in scanned.values("-d")]
    source, dynamic = _code(scanned, "-e", "-p")
    loads = tuple((*scanned.values("-r"), *scanned.values("--env-file")))
    if source is not None:
        return _with_defines(InlineCode(language, source, False, None, dynamic, loads=loads,
                                        args=scanned.operands), defines)
    if not scanned.operands:
        return None
    command, rest = scanned.operands[0], scanned.operands[1:]
    if command.dynamic:
        return _unknown_subcommand(language, command)
    if command.text == "exec":  # a shell string, run by bun's own shell
        script = " ".join(w.text for w in rest)
        return InlineCode("bash", script, False, None, any(w.dynamic for w in rest))
    if command.text == "repl":
        return InlineCode(language, from_stdin=True, loads=loads)
    if command.text in specs.BUN_SUBCOMMANDS:
        return None
    if command.text == "run":
        inner = scan(specs.BUN, rest)
        if inner.problem:
            return InlineCode(language, unparseable=inner.problem)
        if not inner.operands:
            return None
        command, rest = inner.operands[0], inner.operands[1:]
        loads = (*loads, *inner.values("-r"))
        if command.text == "-":
            return InlineCode(language, from_stdin=True, loads=loads, args=rest)
    if "/" in command.text or command.text.endswith(specs.SCRIPT_SUFFIXES):
        return _with_defines(InlineCode(language, script_path=command, loads=loads, args=rest),
                             defines)
    return None  # a package.json script: decided by name, like `npm run`


def _with_defines(code: InlineCode, defines: list[Word]) -> InlineCode:
    """bun --define NAME:VALUE pastes VALUE into the program as code."""
    if not defines:
        return code
    pieces = [*defines, *([Word(code.source, dynamic=code.dynamic)] if code.source else [])]
    return InlineCode(code.language, "\n".join(w.text for w in pieces), code.from_stdin,
                      code.script_path, any(w.dynamic for w in pieces), loads=code.loads,
                      args=code.args)


# -- php, lua, osascript, R, julia -------------------------------------------------------
_PHP_LOADING_INI = re.compile(r"\s*(auto_prepend_file|auto_append_file|extension|zend_extension)"
                              r"\s*=\s*(.*)", re.S | re.I)


def _php(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.PHP, args)
    if scanned.problem:
        return InlineCode(language, unparseable=scanned.problem)
    loads = [*scanned.values("-c", "-z")]
    for setting in scanned.values("-d"):
        match = _PHP_LOADING_INI.match(setting.text)
        if match or setting.dynamic:
            loads.append(Word(match[2] if match else setting.text, dynamic=setting.dynamic))
    source, dynamic = _code(scanned, "-r", "-B", "-R", "-E")
    operands = scanned.operands
    scripts = scanned.values("-f", "-F")
    if source is not None or scripts:
        return InlineCode(language, source, scanned.has("-a"), scripts[0] if scripts else None,
                          dynamic, loads=tuple(loads), args=operands)
    if scanned.names() & specs.PHP_NO_RUN:
        return None
    return _php_operands(language, scanned, tuple(loads))


def _php_operands(language: str, scanned: Scanned, loads: tuple[Word, ...]) -> InlineCode:
    operands = scanned.operands
    if operands and operands[0].text != "-":
        return InlineCode(language, script_path=operands[0], from_stdin=scanned.has("-a"),
                          loads=loads, args=operands[1:])
    return InlineCode(language, from_stdin=True, loads=loads, args=operands[1:])


def _lua(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.LUA, args)
    if scanned.has("-b"):
        return None  # luajit -b: the bytecode tool, which runs no program
    return _generic(language, scanned, ("-e",), loads=("-l", "-j"), queries=frozenset({"-v"}),
                    stdin_options=("-i",))


def _osascript(language: str, args: Sequence[Word]) -> InlineCode | None:
    return _generic(language, scan(specs.OSASCRIPT, args), ("-e",), stdin_options=("-i",))


def _rscript(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.RSCRIPT, args)
    return _generic(language, scanned, ("-e",), queries=frozenset({"--help", "--version"}),
                    stdin_when_empty=False)


def _r(language: str, args: Sequence[Word]) -> InlineCode | None:
    if args and args[0].text == "CMD":
        return None  # R CMD INSTALL/BATCH/...: R's tools, decided by name
    scanned = scan(specs.RSCRIPT, args)
    code = _generic(language, scanned, ("-e",), queries=frozenset({"--help", "--version"}))
    files = scanned.values("-f")
    if code is None or not files or code.source is not None:
        return code
    return InlineCode(language, script_path=files[0], args=scanned.operands)


def _julia(language: str, args: Sequence[Word]) -> InlineCode | None:
    scanned = scan(specs.JULIA, args)
    if scanned.has("-m") and not scanned.problem:
        modules = scanned.values("-m")
        return InlineCode(language, module=modules[0] if modules else None,
                          args=scanned.operands)
    return _generic(language, scanned, ("-e", "-E"), loads=("-L", "-J"),
                    queries=frozenset({"-h", "-v", "--help-hidden"}), stdin_options=("-i",))


# -- languages without an analysis -------------------------------------------------------
_OPAQUE_CODE = {
    "tclsh": (), "wish": (), "expect": ("-c",),
    "pwsh": ("-c", "-command", "-e", "-ec", "-encodedcommand", "-cwa", "-commandwithargs"),
    "powershell": ("-c", "-command", "-e", "-ec", "-encodedcommand"),
    "guile": ("-c", "-e", "-l", "-x"), "racket": ("-e", "-f", "-r", "-t", "-l", "-i"),
    "sbcl": ("--eval", "--load", "--script"), "clisp": ("-x", "-i"),
    "elixir": ("-e", "--eval", "-r", "-pr"), "erl": ("-eval", "-s", "-run"),
    "groovy": ("-e",), "jshell": (), "raku": ("-e",), "perl6": ("-e",),
}


def _opaque(language: str, args: Sequence[Word]) -> InlineCode | None:
    """No analysis here: any option that might carry code makes all of it the program text."""
    if any(w.lead_dynamic for w in args):
        return InlineCode(language, unparseable="option computed at run time")
    lowered = [w.text.lower() for w in args]
    code_options = {o for opts in _OPAQUE_CODE.values() for o in opts}
    for i, text in enumerate(lowered):
        name = text.partition("=")[0]
        if name in code_options or (name.startswith(("-com", "-enc")) and len(name) > 3):
            rest = args[i:]
            return InlineCode(language, " ".join(w.text for w in rest), False, None,
                              any(w.dynamic for w in rest))
    if any(t in ("-v", "--version", "-version", "-h", "--help", "-help") for t in lowered):
        return None
    operands = [w for w in args if not w.text.startswith("-") or w.text == "-"]
    if not operands or operands[0].text == "-":
        return InlineCode(language, from_stdin=True)
    return InlineCode(language, script_path=operands[0])


_HANDLERS: dict[str, Handler] = {
    "irb": _irb, "node": _node, "nodejs": _node, "deno": _deno, "bun": _bun,
    "rscript": _rscript, "r": _r,
}
_LANGUAGE_HANDLERS: dict[str, Handler] = {
    "python": _python, "python2": _python, "perl": _perl, "ruby": _ruby, "php": _php,
    "lua": _lua, "applescript": _osascript, "julia": _julia,
}
