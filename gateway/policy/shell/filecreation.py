"""Whether a command may create files whose names are not among the writes recorded for it
(an unknown program, a build, an archive, a symbolic link, git): then a glob that matches
nothing now may match something when the command runs, and a name beginning with '-' may
appear."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.policy.shell.filetable import BUILTINS, READERS
from gateway.policy.shell.words import Word

_CREATES_NOTHING = frozenset((
    f"{READERS} {BUILTINS} ls dir vdir tree stat du df realpath readlink basename dirname "
    "echo printf test [ [[ cd pushd popd dirs which type command whereis kill "
    "sleep true false : export declare local unset set shopt alias unalias date env "
    "printenv pwd id whoami uname hostname ps pgrep pkill pidof seq yes expr wait jobs "
    "history man help info tldr grep egrep fgrep rg ag ack awk gawk mawk sed jq yq cut tr "
    "uniq xxd wc sort head tail find xargs nice nohup timeout time stdbuf ionice chrt "
    "taskset setsid command builtin exec getent groups who w users uptime nproc lscpu free "
    "top htop lsof ss netstat ping dig nslookup host numfmt factor locale getconf tty "
    "stty test cmp comm diff"
).split())
"""Programs that create no file (wrappers: the command they run is checked on its own)."""
_RECORDED = ("rm unlink rmdir shred touch truncate chmod chown chgrp mkdir mkfifo mknod tee "
             "gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd lz4 sponge cp mv install ln link dd")
_RECORDED_CREATES = frozenset(_RECORDED.split())
"""Programs whose files created are the writes recorded for them (names known)."""
CHANGES_ONLY = frozenset({"rm", "rmdir", "unlink", "shred", "chmod", "chown", "chgrp"})
"""Programs whose writes remove or change files that exist: they create no name."""
_UNRECORDED_OPTIONS: dict[str, tuple[str, ...]] = {
    # recursive copies create the source's names (a symbolic link's target is read as
    # everything under it: see fileuse._linked)
    "cp": ("-r", "-R", "-a", "--recursive", "--archive"),
    "gzip": ("-r", "--recursive"), "gunzip": ("-r", "--recursive"),
}
_GIT_READS = ("status diff log show blame grep ls-files ls-tree rev-parse rev-list cat-file "
              "describe shortlog for-each-ref reflog remote branch tag config help version add "
              "commit fetch push rm mv")
_GIT_NO_NEW_FILES = frozenset(_GIT_READS.split())


def creates_unknown_names(name: str, words: Sequence[Word], globs_too: bool = True) -> bool:
    """Whether the command may create files whose names and kinds are not among the writes
    recorded for it (an unknown program, a build, an archive, a symbolic link, git).
    `globs_too`: a glob that may expand to an option (`cp * d` with a file named -s) counts;
    without, only options computed at run time do."""
    if name in _CREATES_NOTHING:
        return False
    if name == "git":
        sub = next((w.text for w in words[1:] if not w.text.startswith("-")), "")
        return sub not in _GIT_NO_NEW_FILES
    if name not in _RECORDED_CREATES:
        return True
    risky = _UNRECORDED_OPTIONS.get(name, ())
    for word in words[1:]:
        text = word.text
        if word.may_be_option and (globs_too or word.dynamic):
            return True  # an option computed at run time: -s, -r, ... may be among them
        if text == "--":
            return False
        if text.startswith("--") and text.partition("=")[0] in risky:
            return True
        if text.startswith("-") and not text.startswith("--") and any(
                f"-{c}" in risky for c in text[1:]):
            return True
    return False
