"""sed scripts read as sed reads them: which commands run a shell (`e`, `s///e`) and which
files they read or write (`r`, `R`, `w`, `W`, `s///w`).

A script that does not tokenize is reported as a problem, never guessed at.
"""

from __future__ import annotations

from gateway.policy.shell.interp.effects import CodeEffects, FoundEffects

_NO_ARG = frozenset("=dDgGhHlnNpPxzFqQ")
_LABEL = frozenset("btT:")
_TEXT = frozenset("aic")
_FILE = frozenset("rRwW")


def analyse_sed(script: str) -> CodeEffects:
    """What a sed script runs (`e`), reads (`r`, `R`) and writes (`w`, `W`, `s///w`)."""
    effects = FoundEffects()
    try:
        _Reader(script, effects).run()
    except _Unreadable as exc:
        effects.problem = f"sed script not understood: {exc}"
    if "" in effects.commands:
        effects.problem = effects.problem or "sed runs the pattern space as a command (e)"
    # An `e` with no command runs the pattern space: said above, not a script to analyse.
    effects.commands = [c for c in effects.commands if c]
    return effects.effects()


class _Unreadable(Exception):
    pass


class _Reader:
    def __init__(self, text: str, effects: FoundEffects) -> None:
        self.text = text
        self.pos = 0
        self.effects = effects

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_blanks(self, newlines: bool = True) -> None:
        while self.peek() and (self.peek() in " \t" or (newlines and self.peek() in "\n;")):
            self.pos += 1

    def rest_of_line(self) -> str:
        end = self.text.find("\n", self.pos)
        end = len(self.text) if end < 0 else end
        value = self.text[self.pos : end]
        self.pos = end
        return value

    def run(self) -> None:
        while True:
            self.skip_blanks()
            if not self.peek():
                return
            if self.peek() == "#":
                self.rest_of_line()
                continue
            self.address()
            self.skip_blanks(newlines=False)
            if self.peek() == ",":
                self.pos += 1
                self.skip_blanks(newlines=False)
                self.address()
                self.skip_blanks(newlines=False)
            while self.peek() == "!":
                self.pos += 1
                self.skip_blanks(newlines=False)
            self.command()

    def address(self) -> None:
        char = self.peek()
        if char.isdigit() or char in "+~":
            self.pos += 1
            while self.peek().isdigit() or self.peek() == "~":
                self.pos += 1
        elif char == "$":
            self.pos += 1
        elif char == "/":
            self.delimited("/")
            while self.peek() in ("I", "M"):
                self.pos += 1
        elif char == "\\":
            self.pos += 1
            delimiter = self.peek()
            if not delimiter:
                raise _Unreadable("address delimiter missing")
            self.delimited(delimiter)
            while self.peek() in ("I", "M"):
                self.pos += 1

    def delimited(self, delimiter: str) -> str:
        """Skip `delimiter TEXT delimiter` (pos at the opening one); return TEXT."""
        self.pos += 1
        start = self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\":
                self.pos += 2
                continue
            if char == "\n" and delimiter != "\n":
                raise _Unreadable("newline inside a regex")
            if char == delimiter:
                value = self.text[start : self.pos]
                self.pos += 1
                return value
            self.pos += 1
        raise _Unreadable(f"unterminated {delimiter!r}")

    def command(self) -> None:
        char = self.peek()
        self.pos += 1
        if char in "{}":
            return
        if char in _NO_ARG:
            if char in "qQlL":
                while self.peek().isdigit():
                    self.pos += 1
            return
        if char in _LABEL:
            self.label()
            return
        if char in _TEXT:
            self.text_argument()
            return
        if char in _FILE:
            name = self.rest_of_line().strip()
            (self.effects.reads if char in "rR" else self.effects.writes).append(name)
            return
        if char == "e":
            self.effects.commands.append(self.rest_of_line().strip())
            return
        if char == "s":
            self.substitute()
            return
        if char == "y":
            delimiter = self.peek()
            self.delimited(delimiter)
            self.pos -= 1
            self.delimited(delimiter)
            return
        if char == "v":
            self.label()
            return
        raise _Unreadable(f"unknown command {char!r}")

    def label(self) -> None:
        while self.peek() and self.peek() not in ";\n}":
            self.pos += 1

    def text_argument(self) -> None:
        """a/i/c TEXT: to the end of the line, lines joined by a trailing backslash."""
        while self.pos < len(self.text):
            line = self.rest_of_line()
            if not line.endswith("\\") or self.pos >= len(self.text):
                return
            self.pos += 1

    def substitute(self) -> None:
        delimiter = self.peek()
        if not delimiter or delimiter in "\n\\":
            raise _Unreadable("bad s delimiter")
        self.delimited(delimiter)
        self.pos -= 1
        self.delimited(delimiter)
        while self.peek() and self.peek() not in ";\n}":
            flag = self.peek()
            self.pos += 1
            if flag == "e":
                self.effects.commands.append("")  # runs the pattern space: unknown text
            elif flag == "w":
                self.effects.writes.append(self.rest_of_line().strip())
                return
            elif not (flag.isdigit() or flag in "gpiImM "):
                raise _Unreadable(f"unknown s flag {flag!r}")
