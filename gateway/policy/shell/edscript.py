"""ed's command language, as `ed` reads it from stdin: the shell commands it runs (`!cmd`,
`r !cmd`, `w !cmd`, `e !cmd`) and the files it reads (`r F`, `e F`) and writes (`w F`, `W F`,
and `f F`, which names the file a later `w` writes).

An address comes first (line numbers, `.`, `$`, `,`, `;`, marks, `/re/`, `?re?`, offsets); a
line whose command cannot be told apart from its address is unreadable, never guessed at.
"""

from __future__ import annotations

import re

from gateway.policy.shell.interp.effects import CodeEffects, FoundEffects

_ADDRESS = re.compile(r"(?:[0-9.$,;+\-^ \t]|'[a-z]|/(?:[^/\\\n]|\\.)*/?"
                      r"|\?(?:[^?\\\n]|\\.)*\??)*")
_FILE_COMMANDS = {"r": "read", "e": "read", "E": "read", "w": "write", "W": "write",
                  "f": "write"}
_RUNS_OR_OPENS = re.compile(r"!|(?:^|[^A-Za-z])[rwWeEf](?:\s|$)")
_TEXT_COMMANDS = frozenset("aic")
"""a, i and c take lines of text up to a lone `.`: no commands in them."""


def analyse_ed(script: str) -> CodeEffects:
    effects = FoundEffects()
    in_text = False
    for line in script.splitlines():
        if in_text:
            in_text = line != "."
            continue
        address = _ADDRESS.match(line)
        rest = line[address.end() if address else 0:]
        command, argument = rest[:1], rest[1:]
        if command == "!":
            effects.commands.append(argument)
        elif command in ("w", "W") and argument.startswith(("q", "Q")):
            continue  # wq: write the file being edited, then quit
        elif command in _FILE_COMMANDS and argument[:1] in (" ", "\t", "!", ""):
            target = argument.strip()
            if target.startswith("!"):
                effects.commands.append(target[1:])
            elif target:
                (effects.reads if _FILE_COMMANDS[command] == "read"
                 else effects.writes).append(target)
        elif command in _TEXT_COMMANDS and not argument.strip():
            in_text = True
        elif command in ("g", "G", "v", "V") and _RUNS_OR_OPENS.search(argument):
            effects.problem = "ed runs a command list that opens files or runs commands"
    return effects.effects()
