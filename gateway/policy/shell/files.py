"""What the scanner may look up on disk: script files a shell is asked to run, glob matches
and git aliases. The one impure part of shell analysis, behind a small interface (tests pass
their own) so decisions stay bounded (sizes, counts) whatever the disk holds.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Protocol

from gateway.policy.paths import decision_home, decision_variable, expand_user
from gateway.policy.shell.words import Word

MAX_SCRIPT_BYTES = 256 * 1024
_SPECIAL_ROOTS = ("/dev/", "/proc/", "/sys/")


@dataclass(frozen=True)
class ScriptText:
    text: str | None
    """The script, or None when it cannot be known; `why` says why."""
    why: str = ""
    missing: bool = False
    """Nothing is at the path (yet)."""
    bash_runs: bool = False
    """Not read (NUL bytes), yet bash runs it as a script when it is executed: no NUL comes
    before the first newline of its first 80 bytes (bash's own test for a binary)."""


class Files(Protocol):
    def script(self, path: str, cwd: str) -> ScriptText: ...

    def glob(self, pattern: str, cwd: str, options: frozenset[str] = frozenset()
             ) -> list[str] | None:
        """The words a glob word expands to now, as bash expands it with these glob
        options (the word itself when it matches nothing; None: cannot tell)."""
        ...

    def is_dir(self, path: str, cwd: str) -> bool:
        """Whether `path` is a directory now (symbolic links followed)."""
        ...

    def git_alias(self, name: str, cwd: str) -> Word | None:
        """`alias.NAME` from the git configuration in force; a dynamic Word when it cannot
        be known (a config that does not parse, or includes other files)."""
        ...

    def environment(self, name: str) -> str | None:
        """A variable of the environment the command inherits (the hook's own, which
        Claude Code passes on), or None."""
        ...

    def archive_members(self, path: str, cwd: str) -> list[str] | None:
        """The member names of the archive at `path` (archives.members), or None."""
        ...


def resolve(path: str, cwd: str) -> str:
    expanded = expand_user(path)
    return os.path.normpath(os.path.join(cwd or "/", expanded))


class DiskFiles:
    """The real filesystem, read with caps."""

    def script(self, path: str, cwd: str) -> ScriptText:
        target = resolve(path, cwd)
        real = os.path.realpath(target)
        if any(p.startswith(_SPECIAL_ROOTS) for p in (target + "/", real + "/")) or path == "-":
            return ScriptText(None, f"{path} is a device or process file, not a script on disk")
        try:
            info = os.stat(real)
        except OSError:
            return ScriptText(None, f"{path} does not exist yet (the command may write it)",
                              missing=True)
        if not stat.S_ISREG(info.st_mode):
            return ScriptText(None, f"{path} is not a regular file")
        if info.st_size > MAX_SCRIPT_BYTES:
            return ScriptText(None, f"{path} is larger than {MAX_SCRIPT_BYTES // 1024} KiB")
        try:
            with open(real, "rb") as handle:
                data = handle.read(MAX_SCRIPT_BYTES + 1)
        except OSError as exc:
            return ScriptText(None, f"{path} cannot be read: {exc.strerror or exc}")
        if len(data) > MAX_SCRIPT_BYTES:
            return ScriptText(None, f"{path} is larger than {MAX_SCRIPT_BYTES // 1024} KiB")
        if b"\0" in data:  # bash refuses it; python runs bytecode no one can read here
            first = data[:80].split(b"\n", 1)[0]
            return ScriptText(None, f"{path} is a binary file, not a script",
                              bash_runs=b"\0" not in first)
        return ScriptText(data.decode("utf-8", "replace"))

    def glob(self, pattern: str, cwd: str, options: frozenset[str] = frozenset()
             ) -> list[str] | None:
        from gateway.policy.shell.globs import glob_names

        return glob_names(pattern, cwd, options, False)

    def is_dir(self, path: str, cwd: str) -> bool:
        return os.path.isdir(resolve(path, cwd))

    def git_alias(self, name: str, cwd: str) -> Word | None:
        for path in _git_config_files(cwd):
            value = _alias_in(path, name)
            if value is not None:
                return value
        return None


    def environment(self, name: str) -> str | None:
        return decision_variable(name)

    def archive_members(self, path: str, cwd: str) -> list[str] | None:
        from gateway.policy.shell.archives import members  # only extractions need it

        return members(resolve(path, cwd))


DISK = DiskFiles()


def _git_config_files(cwd: str) -> list[str]:
    files: list[str] = []
    here = os.path.realpath(cwd or "/")
    for _ in range(64):
        candidate = os.path.join(here, ".git", "config")
        if os.path.isfile(candidate):
            files.append(candidate)
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    home = decision_home()
    # where git reads its user configuration
    xdg = decision_variable("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files += [os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config"),
              "/etc/gitconfig"]
    return files


def _alias_in(path: str, name: str) -> Word | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_SCRIPT_BYTES)
    except OSError:
        return None
    import configparser  # on first use: only git aliases need it, and it compiles regexes

    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return Word(f"({path} does not parse)", dynamic=True)
    sections = [s for s in parser.sections() if s.lower().startswith(("include", "includeif"))]
    if parser.has_section("alias") and parser.has_option("alias", name):
        return Word(parser.get("alias", name).strip().strip('"'))
    if sections:
        return Word(f"({path} includes other files)", dynamic=True)
    return None
