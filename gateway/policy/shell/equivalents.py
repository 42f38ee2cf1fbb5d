"""Commands whose effect is another command's: `find DIR -delete` removes DIR and everything
under it as `rm -r -f -- DIR` does, so `Bash(rm -rf:*)` applies to it too, as it applies to
`shutil.rmtree(DIR)` (interp/effects.py); `chmod a+rwx F` leaves F's mode 777 as
`chmod 777 F` does. Each is checked beside the command as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gateway.policy.shell.words import Word

_FIND_SELECTING = frozenset((
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-type", "-xtype", "-newer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
    "-size", "-empty", "-user", "-group", "-perm", "-links", "-inum", "-samefile", "-lname",
    "-ilname", "-prune", "-not", "!", "-o", "-or", "-uid", "-gid", "-nouser", "-nogroup",
    "-readable", "-writable", "-executable", "-used", "-fstype", "-context",
))
"""Tests that narrow what find selects: with any of them, -delete removes a selection, not
whole trees. (-mindepth/-maxdepth do not: `find d -mindepth 1 -delete` empties d.)"""
_RM_RF = (Word("rm"), Word("-r"), Word("-f"), Word("--"))


def equivalent_commands(name: str, words: Sequence[Word]) -> list[list[Word]]:
    """The commands `words` (argv, name first) is equivalent to, beside itself."""
    args = list(words[1:])
    texts = [w.text for w in args]
    if name == "find" and "-delete" in texts:
        start = next((i for i, t in enumerate(texts) if t.startswith(("-", "(", "!"))),
                     len(texts))
        paths = args[:start] or [Word(".")]
        if _FIND_SELECTING.isdisjoint(texts[start:]):
            return [[*_RM_RF, *paths]]
        return []
    if name in ("tar", "gtar", "bsdtar") and "--remove-files" in texts:
        return [[*_RM_RF, *_operands(args)]]
    if name == "zip" and any(t == "--move" or (t.startswith("-") and not t.startswith("--")
                                               and "m" in t[1:]) for t in texts):
        operands = _operands(args)
        return [[*_RM_RF, *operands[1:]]] if len(operands) > 1 else []
    if name in ("7z", "7za", "7zz") and "-sdel" in texts:
        operands = _operands(args)
        return [[*_RM_RF, *operands[2:]]] if len(operands) > 2 else []
    if name == "cmake" and texts[:1] == ["-E"] and len(texts) > 1:
        sub, rest = texts[1], args[2:]
        if sub in ("rm", "remove", "remove_directory", "rmdir"):
            recursive = sub == "remove_directory" or any(t in ("-r", "-R", "-rf", "-fr", "-Rf")
                                                         for t in texts[2:])
            paths = [w for w in rest if not w.text.startswith("-")]
            return [[Word("rm"), *((Word("-r"),) if recursive else ()), Word("-f"), Word("--"),
                     *paths]]
    if name == "unlink" and args:
        return [[Word("rm"), Word("--"), *args]]
    if name == "chmod":
        return _chmod_spelled_in_octal(args)
    if name.startswith(("python", "pypy")) and texts[:1] == ["-m"] and texts[1:2] in (
            ["tarfile"], ["zipfile"]):
        return _archive_module(texts[1], args[2:])
    return []


def _archive_module(module: str, args: list[Word]) -> list[list[Word]]:
    """`python -m tarfile -e A DIR` extracts as `tar -xf A -C DIR` does, `-c A SRC...`
    creates as `tar -cf A SRC...`; zipfile likewise, as unzip and zip -r."""
    if not args or args[0].text not in ("-e", "--extract", "-c", "--create"):
        return []
    rest = args[1:]
    if args[0].text in ("-c", "--create"):
        if not rest:
            return []
        maker = ["tar", "-cf"] if module == "tarfile" else ["zip", "-q", "-r"]
        return [[*(Word(w) for w in maker), *rest]]
    if not rest:
        return []
    into = rest[1] if len(rest) > 1 else Word(".")
    if module == "tarfile":
        return [[Word("tar"), Word("-xf"), rest[0], Word("-C"), into]]
    return [[Word("unzip"), Word("-o"), Word("-q"), rest[0], Word("-d"), into]]


_CHMOD_OPTIONS = re.compile(r"^(-[cfvR]+|--[a-z-]+(=.*)?)$")
_CLAUSE = re.compile(r"^([ugoa]*)((?:[-+=][rwxXst]*)+)$")
_WHO = {"u": 0o4700, "g": 0o2070, "o": 0o1007}
"""Each class's permission bits and the special bit its `s` or `t` sets."""
_PERM = {"r": 0o444, "w": 0o222, "x": 0o111, "s": 0o6000, "t": 0o1000}


def _chmod_spelled_in_octal(args: list[Word]) -> list[list[Word]]:
    """`chmod 0777 F`, `chmod a=rwx F`: the same command with its mode in three octal digits
    (and four when a special bit is set), when the mode fixes every permission bit."""
    at = next((i for i, w in enumerate(args) if not _CHMOD_OPTIONS.match(w.text)), None)
    if at is None or args[at].dynamic or at + 1 >= len(args):
        return []
    result = mode_result(args[at].text)
    if result is None:
        return []
    spellings = [f"{result & 0o777:03o}"] + ([f"{result:04o}"] if result & 0o7000 else [])
    return [[Word("chmod"), *args[:at], Word(text), *args[at + 1:]]
            for text in spellings if text != args[at].text]


def mode_result(mode: str) -> int | None:
    """The mode `chmod MODE` leaves whatever the file's mode was, or None when it depends on
    it (`g+w`, `u-x`, `X`). A class-less clause counts as `a`: the umask that would narrow it
    is not known here, so the widest result is assumed."""
    if re.fullmatch(r"0*[0-7]{1,4}", mode):
        return int(mode, 8)
    set_bits, clear_bits = 0, 0
    for clause in mode.split(","):
        found = _CLAUSE.match(clause)
        if found is None:
            return None
        who = found.group(1).replace("a", "ugo") or "ugo"
        scope = 0
        for letter in who:
            scope |= _WHO[letter]
        for op, perms in re.findall(r"([-+=])([rwxXst]*)", found.group(2)):
            bits = 0
            for letter in perms.replace("X", ""):
                bits |= _PERM[letter]
            bits &= scope
            if op == "=":
                set_bits, clear_bits = set_bits & ~scope, clear_bits | (scope & 0o777)
            if op in "+=":
                set_bits, clear_bits = set_bits | bits, clear_bits & ~bits
            else:
                set_bits, clear_bits = set_bits & ~bits, clear_bits | bits
            if "X" in perms:
                set_bits, clear_bits = set_bits & ~(0o111 & scope), clear_bits & ~(0o111 & scope)
    if (set_bits | clear_bits) & 0o777 != 0o777:
        return None
    return set_bits


def _operands(args: list[Word]) -> list[Word]:
    return [w for w in args if not w.text.startswith("-")]
