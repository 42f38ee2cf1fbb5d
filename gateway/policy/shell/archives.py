"""What an archive extraction writes: each member under the destination directory.

`tar -xf a.tar -C DIR`, `unzip -o a.zip -d DIR`, `7z x a.7z -oDIR` and `cpio -i` write the
archive's member names under DIR (the working directory by default), replacing what is
there: `tar -C .github/workflows -xf evil.tar` changes the workflows. For an archive on disk
the member names are read from it (tar and zip, bounded); for one read from a pipe, from
standard input or not on disk yet, anything under DIR may be written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gateway.policy.shell.words import Word

EXTRACTORS: Final = frozenset({"tar", "gtar", "bsdtar", "unzip", "7z", "7za", "7zz", "cpio"})
MAX_MEMBERS: Final = 2_000
"""Members named one by one; past it, each top-level name is a tree that may be written."""
MAX_TAR_BYTES: Final = 32 * 1024 * 1024
"""A tar archive is read through to list it (decompressed as it goes): larger ones are not
listed, and anything under the destination may be written."""


@dataclass(frozen=True)
class Extraction:
    archive: Word | None
    """The archive file; None when it is read from standard input or its members are
    renamed as they are written (tar --transform)."""
    destination: Word
    strip: int = 0
    """Leading components taken off each member's name (tar --strip-components)."""
    absolute: bool = False
    """Members keep a leading `/` (tar -P): written where they name, not under the
    destination."""


def extraction(name: str, words: list[Word]) -> Extraction | None:
    """The extraction `words` (argv, name first) runs; None when it extracts nothing (it
    creates, lists, tests, or extracts to standard output)."""
    args = list(words[1:])
    if name in ("tar", "gtar", "bsdtar"):
        return _tar(args)
    if name == "unzip":
        return _unzip(args)
    if name == "cpio":
        texts = [w.text for w in args]
        extracting = any(t == "--extract" or (t.startswith("-") and not t.startswith("--")
                                               and "i" in t[1:]) for t in texts)
        return Extraction(None, Word(".")) if extracting else None
    return _seven_zip(args)


_TAKES_VALUE = "fCTXbLKNVgHI"
"""tar's short options that take a value (a file, a directory, a number, a program)."""


TARS: Final = ("tar", "gtar", "bsdtar")


def tar_dashed(words: Sequence[Word]) -> list[Word]:
    """tar's traditional first word (`czf x.tgz dir`: keys without a dash, each key that
    takes a value taking the next word in order) as the options it stands for (`-c -z -f
    x.tgz dir`), so option tables read it like any other spelling."""
    if len(words) < 2 or not words[1].text.isalpha():
        return list(words)
    rest = list(words[2:])
    dashed = [words[0]]
    for letter in words[1].text:
        dashed.append(Word("-" + letter, dynamic=words[1].dynamic))
        if letter in _TAKES_VALUE and rest:
            dashed.append(rest.pop(0))
    return [*dashed, *rest]


def _tar(args: list[Word]) -> Extraction | None:
    extracting = False
    to_stdout = False
    renamed = False
    absolute = False
    strip = 0
    archive: Word | None = None
    destination = Word(".")
    i = 0
    while i < len(args):
        text = args[i].text
        following = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if text.startswith("--"):
            option, eq, value = text.partition("=")
            extracting |= option in ("--extract", "--get")
            to_stdout |= option in ("--to-stdout", "--to-command")
            renamed |= option in ("--transform", "--xform")
            absolute |= option == "--absolute-names"
            if option in ("--strip-components", "--strip"):
                word = Word(value) if eq else following
                i += 0 if eq else 1
                renamed |= word is None or not word.text.isdigit()
                strip = int(word.text) if word is not None and word.text.isdigit() else 0
                continue
            if option in ("--file", "--directory"):
                word = Word(value, dynamic=args[i - 1].dynamic) if eq else following
                i += 0 if eq else 1
                if word is not None:
                    archive, destination = ((word, destination) if option == "--file"
                                            else (archive, word))
            continue
        if text.startswith("-") or i == 1:  # the first word may be a bundle without its dash
            old_style = not text.startswith("-")
            letters = text.lstrip("-")
            for k, letter in enumerate(letters):
                extracting |= letter == "x"
                to_stdout |= letter == "O"
                renamed |= letter == "s"  # bsdtar -s: a substitution on member names
                absolute |= letter == "P"
                if letter not in _TAKES_VALUE:
                    continue
                rest = letters[k + 1:]
                if old_style or not rest:
                    # `tar xfC a.tar dir`: each letter takes the next word, in order
                    word = args[i] if i < len(args) else None
                    i += 1
                else:
                    word = Word(rest, dynamic=args[i - 1].dynamic)  # -fa.tar
                if word is not None and letter in "fC":
                    archive, destination = ((word, destination) if letter == "f"
                                            else (archive, word))
                if not old_style:
                    break
    if not extracting or to_stdout:
        return None
    unknown = archive is None or archive.text == "-" or renamed
    if unknown and absolute:
        destination = Word("/")  # anything anywhere
    return Extraction(None if unknown else archive, destination, strip, absolute)


def _unzip(args: list[Word]) -> Extraction | None:
    texts = [w.text for w in args]
    if any(t.startswith("-") and not t.startswith("--") and set(t[1:]) & set("lvtpcZz")
           for t in texts):
        return None  # lists, tests or prints
    destination = Word(".")
    archive: Word | None = None
    for i, word in enumerate(args):
        if word.text == "-d" and i + 1 < len(args):
            destination = args[i + 1]
        elif word.text.startswith("-d") and len(word.text) > 2:
            destination = Word(word.text[2:], dynamic=word.dynamic)
        elif not word.text.startswith("-") and archive is None and (
                i == 0 or args[i - 1].text != "-d"):
            archive = word
    return Extraction(archive, destination)


def _seven_zip(args: list[Word]) -> Extraction | None:
    operands = [w for w in args if not w.text.startswith("-")]
    if not operands or operands[0].text not in ("x", "e"):
        return None
    if any(w.text == "-so" for w in args):
        return None  # to standard output
    destination = next((Word(w.text[2:], dynamic=w.dynamic) for w in args
                        if w.text.startswith("-o") and len(w.text) > 2), Word("."))
    return Extraction(operands[1] if len(operands) > 1 else None, destination)


def members(path: str) -> list[str] | None:
    """The member names of the tar or zip archive at `path` (past MAX_MEMBERS, the distinct
    top-level names, each as `NAME/**`: everything under it); None when it cannot be read
    (not on disk, another format, corrupt, a tar archive over MAX_TAR_BYTES)."""
    import tarfile  # only extractions of archives on disk need them
    import zipfile

    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        elif os.path.isfile(path) and os.path.getsize(path) <= MAX_TAR_BYTES and (
                tarfile.is_tarfile(path)):
            with tarfile.open(path) as archive:
                names = [m.name for m in archive]
        else:
            return None
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, ValueError):
        return None
    if len(names) <= MAX_MEMBERS:
        return names
    return list(dict.fromkeys(n.lstrip("/").split("/", 1)[0] + "/**" for n in names))
