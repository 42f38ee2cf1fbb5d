"""The files a git command line reads and writes: paths after `--` or `rev:path`, operands
of the subcommands that take paths, `-o`/`--output` and `config -f` files, what `rm -r`,
`clean` and `grep --no-index` reach under a directory, and what `init`, `clone`, `worktree
add`, `bundle create` and `submodule add` make."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.policy.shell.filetable import GIT_PATH_SUBCOMMANDS, Mode
from gateway.policy.shell.filetrees import tree
from gateway.policy.shell.globs import program_glob
from gateway.policy.shell.words import Word, operand_words

_OUTPUTS = frozenset({"diff", "log", "show", "format-patch", "archive", "whatchanged",
                      "diff-tree", "diff-index", "diff-files", "range-diff", "reflog", "stash"})
"""Subcommands whose `--output F` / `-o F` writes their output to F."""


def git_file_uses(words: Sequence[Word]) -> list[tuple[Mode, Word]]:
    """(mode, path) for each file `words` (git's argv) names."""
    return _git_trees(_git(words), words)


def _git(words: Sequence[Word]) -> list[tuple[Mode, Word]]:
    found: list[tuple[Mode, Word]] = []
    sub = ""
    at = git_subcommand(words)
    after_dashdash = False
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        if sub == "config" and (text in ("-f", "--file") or text.startswith("--file=")):
            value = text.partition("=")[2]
            target = Word(value) if value else (words[i + 1] if i + 1 < len(words) else None)
            if target is not None:  # read, and written by a setting
                found.append(("read", target))
                args = words[at + 1:] if at is not None else ()
                if _config_sets(args) and not (_git_own_config(target.text) and not any(
                        w.text in ("-e", "--edit") for w in args)):
                    found.append(("write", target))
            continue
        option = text.partition("=")[0]
        if sub in _MESSAGE_FILES and option in _MESSAGE_FILES[sub]:
            value = text.partition("=")[2]
            target = Word(value) if value else (words[i + 1] if i + 1 < len(words) else None)
            if target is not None:  # the message, kept in the history (git log shows it)
                found.append(("read", target))
            continue
        if (option in ("--output", "--output-directory") or (
                text.startswith("-o") and not text.startswith("--"))) and sub in _OUTPUTS:
            value = text.partition("=")[2] if text.startswith("--") else text[2:]
            target = Word(value) if value else (words[i + 1] if i + 1 < len(words) else None)
            if target is not None:  # format-patch's is a directory it writes patches into
                found.append(("write", tree(target) if sub == "format-patch" else target))
            continue
        if not sub:
            if i == at:
                sub = text
            continue
        if text == "--":
            after_dashdash = True
            continue
        mode = GIT_PATH_SUBCOMMANDS.get(sub)
        if mode is None or text.startswith("-") or words[i - 1].text in _RESTORE_VALUES:
            continue
        if sub in ("checkout", "restore") and not after_dashdash:
            found.append(("write", program_glob(word)))  # a revision, or a path it restores
            continue
        if text.startswith(":") and text[1:2] in ("(", "/", "!", "^"):
            # pathspec magic (:(icase).ENV, :/x, :!x): any file may be meant
            found.append((mode, Word(f"$({text})", dynamic=True, lead_dynamic=True)))
        elif ":" in text:
            path = text.split(":", 1)[1]
            if path:
                found.append(("read", Word(path, dynamic=word.dynamic)))
        elif after_dashdash or mode == "read" or sub in ("rm", "mv"):
            # A pathspec (git matches globs itself). Before `--` an operand of a reading
            # subcommand that names no revision is a path (`git diff .env`, `git blame .env`,
            # `git diff --no-index x .env`).
            found.append((mode, program_glob(word)))
    return found


def _git_trees(found: list[tuple[Mode, Word]], words: Sequence[Word]
               ) -> list[tuple[Mode, Word]]:
    """`git rm -r DIR` removes everything under DIR (but with --cached); `git clean` the
    untracked files under its pathspecs, or the whole working tree, ignored files too with -x
    (but with -n)."""
    at = git_subcommand(words)
    if at is None:
        return found
    sub, texts = words[at].text, [w.text for w in words[at:]]
    if sub == "rm" and "--cached" not in texts and any(t in ("-r", "--recursive") or (
            t.startswith("-") and not t.startswith("--") and "r" in t[1:]) for t in texts):
        return found + [(mode, tree(w)) for mode, w in found if not w.dynamic]
    if sub in ("checkout", "restore"):  # a directory restored: everything git has under it
        return found + [("write", tree(w)) for mode, w in found if mode == "write"
                        and not w.dynamic and (w.text not in _WHOLE_TREE or _from_history(
                            sub, words[at + 1:]))]
    made = _git_made(sub, words[at + 1:])
    if made is not None and sub == "init":
        # git's own files, sample hooks among them; an existing repository keeps its own
        return [*found, ("write", made)]
    if made is not None:
        return [*found, ("write", made), ("write", tree(made))]
    if sub == "grep" and ("--no-index" in texts or "--untracked" in texts):
        return found + [("read", tree(w)) for w in _git_grep_paths(words[at + 1:])
                        if not w.dynamic]
    if sub == "clean" and not any(t in ("--dry-run", "-n") or (
            t.startswith("-") and not t.startswith("--") and "n" in t[1:]) for t in texts):
        paths = [w for w in words[at + 1:] if not w.text.startswith("-")]
        return found + [("write", tree(w)) for w in paths or [Word(".")] if not w.dynamic]
    return found


_RESTORE_VALUES = frozenset(("-b", "-B", "--orphan", "-s", "--source", "--conflict",
                             "--pathspec-from-file"))
"""checkout's and restore's options whose value is no path."""
_WHOLE_TREE = frozenset((".", "./", ":/", ":(top)", "*"))
"""Pathspecs of the whole working tree: what they restore is a listed limitation."""

def _from_history(sub: str, argv: Sequence[Word]) -> bool:
    """Whether checkout or restore takes the files from a commit (`git checkout HEAD~1 --
    .`, `git restore -s v1 .`), not from the index: then the whole tree restored is checked."""
    texts = [w.text for w in argv]
    if sub == "restore":
        return any(t in ("-s", "--source") or t.startswith("--source=") for t in texts)
    if "--" not in texts:
        return False
    before = texts[:texts.index("--")]
    return any(not t.startswith("-") and (i == 0 or before[i - 1] not in _RESTORE_VALUES)
               for i, t in enumerate(before))


_CONFIG_READS = frozenset(("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l",
                           "--list", "--get-color", "--get-colorbool"))
_CONFIG_VALUES = frozenset(("-f", "--file", "--blob", "--type", "--default", "--comment"))


def _config_sets(args: Sequence[Word]) -> bool:
    """Whether `git config ARGS` may write its file (a lookup by a key alone does not)."""
    if any(w.text in _CONFIG_READS for w in args):
        return False
    operands = [w.text for w in operand_words(args, _CONFIG_VALUES)]
    if operands[:1] in (["get"], ["list"]):
        return False
    return len(operands) != 1 or any(w.text.startswith("--") and w.text not in (
        "--file", "--global", "--system", "--local", "--worktree") for w in args)


def _git_own_config(path: str) -> bool:
    """git's own configuration file (`.git/config`, `~/.gitconfig`): what `git config -f`
    sets there is checked key by key (gitcmd), as without -f."""
    parts = path.replace("\\", "/").split("/")
    return (parts[-1] in ("config", "config.worktree") and ".git" in parts[:-1]) or (
        parts[-1] == ".gitconfig") or parts[-2:] == ["git", "config"]


_MESSAGE_FILES = {
    "commit": frozenset(("-F", "--file", "-t", "--template")),
    **dict.fromkeys(("tag", "notes", "merge", "commit-tree"), frozenset(("-F", "--file"))),
}
"""Options that take a message from a file (`git commit -F .env` puts it in the log)."""

_GIT_MAKERS: dict[str, tuple[int, frozenset[str]]] = {
    "init": (0, frozenset(("--template", "--separate-git-dir", "-b", "--initial-branch",
                           "--object-format", "--ref-format"))),
    "clone": (1, frozenset(("-b", "--branch", "-o", "--origin", "--depth", "--reference",
                            "--separate-git-dir", "-c", "--config", "--template", "-u",
                            "--upload-pack", "--filter", "-j", "--jobs", "--bundle-uri",
                            "--shallow-since", "--shallow-exclude", "--server-option"))),
    "worktree": (1, frozenset(("-b", "-B", "--reason"))),
    "bundle": (1, frozenset()),
    "submodule": (2, frozenset(("-b", "--branch", "--name", "--reference", "--depth"))),
}
"""git subcommands that make a directory or file: (how many operands come before it, the
options that take a value). `git init [DIR]`, `git clone REPO [DIR]`, `git worktree add PATH`,
`git bundle create FILE`, `git submodule add REPO [PATH]`."""


def _git_made(sub: str, argv: Sequence[Word]) -> Word | None:
    """What a git subcommand makes (a repository, a work tree, a bundle), written with
    everything under it."""
    spec = _GIT_MAKERS.get(sub)
    if spec is None:
        return None
    before, values = spec
    operands = operand_words(argv, values)
    if sub in ("worktree", "bundle", "submodule"):
        if not operands or operands[0].text not in ("add", "create"):
            return None
        operands = operands[1:]
        before -= 1
    if sub == "init":  # the repository inside the directory, which may hold other files
        where = operands[0] if operands else Word(".")
        return Word(where.text.rstrip("/") + "/.git", dynamic=where.dynamic)
    if len(operands) > before:
        return operands[before]
    if sub == "clone" and operands:  # REPO's last name, without .git
        name = operands[0].text.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return Word(name.removesuffix(".git") or ".", dynamic=operands[0].dynamic)
    return None


_GIT_GLOBAL_VALUES = frozenset(("-C", "-c", "--git-dir", "--work-tree", "--namespace",
                                "--config-env", "--super-prefix", "--exec-path"))
"""git's own options that take the next word (`git -C DIR grep`): no subcommand."""


def git_subcommand(words: Sequence[Word]) -> int | None:
    """Where git's subcommand is in `words` (after git's own options and their values)."""
    skip = False
    for i, word in enumerate(words[1:], start=1):
        if skip:
            skip = False
        elif word.text in _GIT_GLOBAL_VALUES:
            skip = True
        elif not word.text.startswith("-"):
            return i
    return None


_GIT_GREP_VALUES = frozenset(("-A", "-B", "-C", "-m", "-e", "-f", "--max-count", "--max-depth",
                              "--threads", "--after-context", "--before-context", "--context"))


def _git_grep_paths(argv: Sequence[Word]) -> list[Word]:
    """What `git grep --no-index|--untracked` searches, whole: its pathspecs (after the
    pattern, unless -e/-f gives it), or the working directory (`argv`: after `grep`)."""
    operands: list[Word] = []
    pattern_given = False
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word.text == "--" or not word.text.startswith("-"):
            operands.append(word)
        else:
            skip = word.text in _GIT_GREP_VALUES
            pattern_given = pattern_given or word.text in ("-e", "-f")
    operands = [w for w in operands if w.text != "--"]
    paths = operands if pattern_given else operands[1:]
    return paths or [Word(".")]
