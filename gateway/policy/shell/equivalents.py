"""Commands whose effect is another command's: `find DIR -delete` removes DIR and everything
under it as `rm -r -f -- DIR` does, so `Bash(rm -rf:*)` applies to it too, as it applies to
`shutil.rmtree(DIR)` (interp/effects.py). Each is checked beside the command as written.
"""

from __future__ import annotations

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
    return []


def _operands(args: list[Word]) -> list[Word]:
    return [w for w in args if not w.text.startswith("-")]
