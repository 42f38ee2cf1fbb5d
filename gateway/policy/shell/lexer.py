"""Line continuations removed where bash removes them, and nowhere else.

bash drops backslash-newline before splitting words (`r\\<newline>m` is `rm`), but not inside
single quotes, `$'...'`, comments or quoted here-doc bodies; an unquoted here-doc body is
joined before its delimiter line is recognised. tree-sitter-bash treats the pair as a word
separator, so the text is joined first, context by context. Joining inside a comment would hide
the next line from analysis (`# note \\<newline>rm -rf x` runs rm), so this must match bash
exactly; each case is checked against a real bash in the tests.
"""

from __future__ import annotations

import re

_CONT = "\\\n"
_WORD_BREAK = frozenset(" \t\n;&|()<>")
_DELIM_END = frozenset(" \t\n;&|()<>")
_HEREDOC_OP = re.compile(r"<<(-?)")


def lex(source: str) -> tuple[str, list[str]]:
    """(source with continuations joined as bash joins them, the here-document bodies in
    order as bash reads them). The bodies let the caller check tree-sitter's reading."""
    if _CONT not in source and "<<" not in source:
        return source, []
    joiner = _Joiner(source)
    return joiner.run(), joiner.bodies


class _Joiner:
    """A single left-to-right pass with a stack of quoting contexts."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0
        self.out: list[str] = []
        self.stack: list[str] = ["normal"]
        self.pending: list[tuple[str, bool, bool]] = []
        """Here-docs opened on this line: (delimiter, quoted, strip_tabs)."""
        self.bodies: list[str] = []

    def run(self) -> str:
        src = self.src
        while self.pos < len(src):
            context = self.stack[-1]
            char = src[self.pos]
            if context == "single":
                self.single(char)
            elif context == "ansi":
                self.ansi(char)
            elif context == "double":
                self.double(char)
            else:
                self.code(char, context)
        return "".join(self.out)

    def emit(self, text: str) -> None:
        self.out.append(text)
        self.pos += len(text)

    def at_word_start(self) -> bool:
        for piece in reversed(self.out):
            if piece:
                return piece[-1] in _WORD_BREAK
        return True

    def single(self, char: str) -> None:
        if char == "'":
            self.stack.pop()
        self.emit(char)

    def ansi(self, char: str) -> None:
        if char == "\\" and self.pos + 1 < len(self.src):
            self.emit(self.src[self.pos : self.pos + 2])  # \' and \<newline> stay as written
            return
        if char == "'":
            self.stack.pop()
        self.emit(char)

    def double(self, char: str) -> None:
        src = self.src
        if src.startswith(_CONT, self.pos):
            self.pos += 2
        elif char == "\\" and self.pos + 1 < len(src):
            self.emit(src[self.pos : self.pos + 2])
        elif char == '"':
            self.stack.pop()
            self.emit(char)
        elif char == "`":
            self.stack.append("backtick")
            self.emit(char)
        elif char == "$" and self.opens_expansion():
            pass
        else:
            self.emit(char)

    def opens_expansion(self) -> bool:
        """`$(`, `$((` or `${` at pos: push its context and copy the opener."""
        src = self.src
        if src.startswith("$((", self.pos):
            self.stack.append("arith")
            self.emit("$((")
        elif src.startswith("$(", self.pos):
            self.stack.append("paren")
            self.emit("$(")
        elif src.startswith("${", self.pos):
            self.stack.append("brace")
            self.emit("${")
        else:
            return False
        return True

    def code(self, char: str, context: str) -> None:
        src = self.src
        if src.startswith(_CONT, self.pos):
            self.pos += 2
            return
        if char == "\\" and self.pos + 1 < len(src):
            self.emit(src[self.pos : self.pos + 2])
            return
        if char == "'":
            if self.out and self.out[-1] == "$":
                self.stack.append("ansi")
            else:
                self.stack.append("single")
            self.emit(char)
            return
        if char == '"':
            self.stack.append("double")
            self.emit(char)
            return
        if char == "`":
            if context == "backtick":
                self.stack.pop()
            else:
                self.stack.append("backtick")
            self.emit(char)
            return
        if char == "$" and self.opens_expansion():
            return
        if context == "brace" and char == "}":
            self.stack.pop()
            self.emit(char)
            return
        if context in ("paren", "arith", "subshell") and char == ")":
            if context == "arith" and src.startswith("))", self.pos):
                self.stack.pop()
                self.emit("))")
                return
            self.stack.pop()
            self.emit(char)
            return
        if context in ("paren", "subshell") and char == "(":
            self.stack.append("subshell")
            self.emit(char)
            return
        if char == "#" and context != "brace" and context != "arith" and self.at_word_start():
            end = src.find("\n", self.pos)
            self.emit(src[self.pos :] if end < 0 else src[self.pos : end])
            return
        if char == "<" and context != "arith":
            self.heredoc_operator()
            return
        if char == "\n":
            self.emit(char)
            if self.pending:
                self.heredoc_bodies()
            return
        self.emit(char)

    def heredoc_operator(self) -> None:
        src = self.src
        if src.startswith("<<<", self.pos) or not src.startswith("<<", self.pos):
            self.emit("<<<" if src.startswith("<<<", self.pos) else "<")
            return
        found = _HEREDOC_OP.match(src, self.pos)
        assert found is not None
        self.emit(found.group(0))
        strip = bool(found.group(1))
        while self.pos < len(src) and src[self.pos] in " \t":
            self.emit(src[self.pos])
        start = self.pos
        quoted = False
        name: list[str] = []
        while self.pos < len(src) and src[self.pos] not in _DELIM_END:
            char = src[self.pos]
            if char in "'\"":
                quoted = True
                end = src.find(char, self.pos + 1)
                end = len(src) if end < 0 else end
                name.append(src[self.pos + 1 : end])
                self.pos = end + 1
            elif char == "\\":
                quoted = True
                name.append(src[self.pos + 1 : self.pos + 2])
                self.pos += 2
            else:
                name.append(char)
                self.pos += 1
        self.out.append(src[start : self.pos])
        if name:
            self.pending.append(("".join(name), quoted, strip))

    def heredoc_bodies(self) -> None:
        """Copy the bodies of this line's here-docs; unquoted ones are joined like bash."""
        src = self.src
        for delimiter, quoted, strip in self.pending:
            body: list[str] = []
            while self.pos < len(src):
                end = src.find("\n", self.pos)
                end = len(src) if end < 0 else end
                line = src[self.pos : end]
                consumed = end + 1
                if not quoted:
                    while _odd_backslashes(line) and consumed < len(src):
                        nxt = src.find("\n", consumed)
                        nxt = len(src) if nxt < 0 else nxt
                        line = line[:-1] + src[consumed:nxt]
                        consumed = nxt + 1
                self.out.append(line + ("\n" if consumed <= len(src) else ""))
                self.pos = min(consumed, len(src))
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                body.append(line + "\n")
            self.bodies.append("".join(body))
        self.pending.clear()


def _odd_backslashes(line: str) -> bool:
    """A line ending in an unescaped backslash continues onto the next."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1
