"""awk programs: the commands they run (`system("...")`, `print | "cmd"`, `"cmd" | getline`)
and the files they write (`print > "f"`) or read (`getline < "f"`).

Only string literals can be known: a command built at run time, or any pipe or `system` call
whose argument is not a literal, is a problem (the caller treats it as unparseable). A `>`
redirects only inside a print statement outside parentheses; elsewhere it compares.
"""

from __future__ import annotations

import re

from gateway.policy.shell.interp.effects import CodeEffects, FoundEffects

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LITERAL_ARG = re.compile(r'\s*\(\s*("(?:[^"\\\n]|\\.)*")\s*\)')
_LITERAL = re.compile(r'\s*("(?:[^"\\\n]|\\.)*")')
_WORD = re.compile(r"[A-Za-z_@][A-Za-z0-9_]*")
_LOADS = frozenset({"@load", "@include", "@namespace"})


def analyse_awk(program: str) -> CodeEffects:
    """What an awk program runs (as shell strings), reads and writes."""
    effects = FoundEffects()
    code = _without_regexes(program)
    blank = _STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', code)
    for found in _WORD.finditer(blank):
        word, end = found.group(0), found.end()
        if word in _LOADS:
            effects.problem = f"awk {word} loads code"
        elif word.startswith("@"):
            effects.problem = f"awk {word}(...) calls a function named at run time"
        elif word == "system":
            arg = _LITERAL_ARG.match(code, end)
            if arg is None:
                effects.problem = "awk system() runs a command built at run time"
            else:
                effects.commands.append(_unquote(arg.group(1)))
        elif word in ("print", "printf"):
            _print_redirects(code, blank, end, effects)
        elif word == "getline":
            _getline(code, blank, found.start(), end, effects)
    return effects.effects()


def _print_redirects(code: str, blank: str, start: int, effects: FoundEffects) -> None:
    depth = 0
    i = start
    while i < len(blank):
        char = blank[i]
        if char in "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return
            depth -= 1
        elif char in ";}\n" and depth == 0:
            return
        elif depth == 0 and char in ">|" and not blank.startswith("||", i):
            op_end = i + (2 if blank.startswith((">>", "|&"), i) else 1)
            target = _LITERAL.match(code, op_end)
            if target is None:
                effects.problem = (f"awk print {'pipes to a command' if char == '|' else 'writes'}"
                                   " named at run time")
            elif char == "|":
                effects.commands.append(_unquote(target.group(1)))
            else:
                effects.writes.append(_unquote(target.group(1)))
            return
        i += 1


def _getline(code: str, blank: str, start: int, end: int, effects: FoundEffects) -> None:
    before = blank[:start].rstrip()
    if before.endswith("|") or before.endswith("|&"):
        head = code[: len(before) - (2 if before.endswith("|&") else 1)].rstrip()
        literal = re.search(r'("(?:[^"\\\n]|\\.)*")$', head)
        if literal is None:
            effects.problem = "awk getline reads from a command built at run time"
        else:
            effects.commands.append(_unquote(literal.group(1)))
        return
    found = re.compile(r'[^;\n}<]*<\s*').match(blank, end)
    if found is not None:
        target = _LITERAL.match(code, found.end())
        if target is None:
            effects.problem = "awk getline reads a file named at run time"
        else:
            effects.reads.append(_unquote(target.group(1)))


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _without_regexes(program: str) -> str:
    """Replace /regex/ literals and comments by blanks (a `|` or `>` in them is neither a
    pipe nor a write). A `/` starts a regex where an operand is expected."""
    out: list[str] = []
    i, n = 0, len(program)
    last = ""
    while i < n:
        char = program[i]
        if char == '"':
            found = _STRING.match(program, i)
            end = found.end() if found else n
            out.append(program[i:end])
            i, last = end, '"'
            continue
        if char == "#":
            end = program.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if char == "/" and not (last and (last.isalnum() or last in "_)]$\"")):
            j = i + 1
            in_class = False
            while j < n and (program[j] != "/" or in_class) and program[j] != "\n":
                if program[j] == "\\":
                    j += 1
                elif program[j] == "[":
                    in_class = True
                elif program[j] == "]":
                    in_class = False
                j += 1
            out.append("/" + " " * (min(j, n) - i - 1) + ("/" if j < n else ""))
            i, last = j + 1, ")"
            continue
        out.append(char)
        if not char.isspace():
            last = char
        i += 1
    return "".join(out)
