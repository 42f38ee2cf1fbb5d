"""Claude Code Bash rule patterns (`rm -rf:*`, `npm run test *`, `git push`) matched as argv.

A pattern is split into a command name, options and operand tokens with the same option data
as commands, so `rm -rf:*` and `rm --force -R x` compare as option sets. `:*` or a trailing
` *` makes the pattern a prefix (at a word boundary); without it, options and operands must
match exactly. A `*` inside a token globs within that word; a lone `*` token spans words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.policy.shell.argv import analyze, normalize_name
from gateway.policy.shell.scan import SimpleCommand
from gateway.policy.shell.words import Word

STAR = "*"


class Match:
    """Match results, ordered (plain ints: enum costs import time on the hook path)."""

    NO = 0
    UNCERTAIN = 1
    """Only a run-time value (an expansion) stands between the command and the rule."""
    YES = 2


def _glob(token: str) -> re.Pattern[str] | str:
    if token == STAR or STAR not in token:
        return token
    return re.compile(".*".join(re.escape(part) for part in token.split(STAR)), re.S)


@dataclass(frozen=True)
class BashPattern:
    name: str
    name_glob: re.Pattern[str] | None
    flags: tuple[tuple[str, tuple[re.Pattern[str] | str, ...]], ...]
    operands: tuple[re.Pattern[str] | str, ...]
    prefix: bool
    source: str

    def match(self, command: SimpleCommand) -> int:
        if self.name_glob is not None:
            if not self.name_glob.fullmatch(command.name):
                return Match.NO
        elif command.name != self.name:
            return Match.NO
        inv = command.invocation
        uncertain = False
        for flag, values in self.flags:
            given = inv.flags.get(flag)
            if given is None:
                if not inv.flaggy_dynamic:
                    return Match.NO
                uncertain = True
                continue
            for value in values:
                if not any(_token_ok(value, v) for v in given):
                    return Match.NO
        if not self.prefix and set(inv.flags) != {flag for flag, _ in self.flags}:
            return Match.NO
        result = _operands(self.operands, inv.operands, self.prefix, inv.unordered)
        if result == Match.NO:
            return Match.NO
        return Match.UNCERTAIN if uncertain else result


def _token_ok(token: re.Pattern[str] | str, text: str) -> bool:
    if isinstance(token, str):
        return token in (STAR, text)
    return token.fullmatch(text) is not None


def _word_ok(token: re.Pattern[str] | str, word: Word) -> int:
    if _token_ok(token, word.text):
        return Match.YES
    return Match.UNCERTAIN if word.dynamic else Match.NO


def _operands(tokens: tuple[re.Pattern[str] | str, ...], words: tuple[Word, ...], prefix: bool,
              unordered: bool) -> int:
    if unordered:
        best = Match.YES
        for token in tokens:
            if token == STAR:
                continue
            found = max((_word_ok(token, w) for w in words), default=Match.NO)
            best = min(best, found)
        return best
    return _seq(tokens, 0, words, 0, prefix)


def _seq(tokens: tuple[re.Pattern[str] | str, ...], ti: int, words: tuple[Word, ...], wi: int,
         prefix: bool) -> int:
    """Best match of tokens[ti:] against words[wi:]: a table over (token, word) positions,
    so `*` tokens cost O(tokens x words), never exponential in the stars."""
    n_tokens, n_words = len(tokens), len(words)
    # best[w] for the current token index: the result of matching tokens[t:] to words[w:]
    best = [Match.YES if (prefix or w == n_words) else Match.NO for w in range(n_words + 1)]
    for t in range(n_tokens - 1, ti - 1, -1):
        token = tokens[t]
        current = [Match.NO] * (n_words + 1)
        if token == STAR:
            running = Match.NO
            for w in range(n_words, -1, -1):
                running = max(running, best[w])
                current[w] = running
        else:
            for w in range(n_words - 1, -1, -1):
                here = _word_ok(token, words[w])
                if here != Match.NO:
                    current[w] = min(here, best[w + 1])
        best = current
    return best[wi]


def parse_bash_pattern(content: str) -> BashPattern:
    """Compile the text inside `Bash(...)`; ValueError says what is wrong with it."""
    import shlex  # compiling only: a decision from the cached policy never splits patterns

    body, prefix = (content[:-2], True) if content.endswith(":*") else (content, False)
    try:
        words = shlex.split(body)
    except ValueError as exc:
        raise ValueError(f"cannot split Bash pattern {content!r}: {exc}") from None
    if words and words[-1] == STAR and len(words) > 1:
        words, prefix = words[:-1], True
    if not words:
        raise ValueError(f"empty Bash pattern {content!r}")
    head = words[0]
    name = head.lower() if STAR in head else normalize_name(head)
    glob = _glob(name)
    name_glob = glob if isinstance(glob, re.Pattern) else (re.compile(".*") if name == STAR
                                                             else None)
    inv = analyze(name, [Word(w) for w in words[1:]])
    flags = tuple(
        (flag, tuple(_glob(v) for v in values if v != STAR)) for flag, values in inv.flags.items()
    )
    operands = tuple(_glob(w.text) for w in inv.operands)
    return BashPattern(name, name_glob, flags, operands, prefix, content)
