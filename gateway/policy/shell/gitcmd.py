"""What a git command line really runs: `-c` configuration and options that name programs,
aliases (from `-c alias.x=...`, from `git config alias.x ...` earlier in the same command, or
from the repository's config files), and every spelling of a forced push.

Pure over the words given; reading config files is the caller's (see `files.Files`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gateway.policy.shell.globs import crossing
from gateway.policy.shell.words import Word, operand_words

GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                           "--config-env", "--super-prefix", "--list-cmds", "--attr-source"})
GLOBAL_CODE = frozenset({"--exec-path", "--config-env", "-p", "--paginate"})
"""--exec-path=DIR runs git's helpers from DIR; --config-env takes a value from the
environment; -p pages through the configured pager."""

_CODE_KEYS = re.compile(
    r"^(?:alias\..+|core\.(?:pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy)"
    r"|diff\.(?:external|.+\.(?:textconv|command))|filter\..+\.(?:clean|smudge|process)"
    r"|merge\..+\.driver|(?:merge|diff)tool\..+\.(?:cmd|path)|credential(?:\..+)?\.helper"
    r"|sequence\.editor|pager\..+|gpg(?:\..+)?\.program|uploadpack\.packobjectshook"
    r"|remote\..+\.(?:uploadpack|receivepack|vcs)|protocol\..*allow|url\..+\.(?:insteadof"
    r"|pushinsteadof)|include\.path|includeif\..+\.path|init\.templatedir|web\.browser"
    r"|browser\..+\.(?:cmd|path)|man\..+\.(?:cmd|path)|interactive\.difffilter"
    r"|sendemail\..*(?:cmd|smtpserver)|ssh\.variant|core\.(?:alternaterefscommand|worktree)"
    r"|log\.showsignature|instaweb\..+|receive\.procreceiverefs|color\.pager|notes\..*)$",
    re.I,
)
"""Configuration keys whose value makes git run a program (or load configuration that
could). `alias.*` values are expanded; the others are scanned as shell or are unparseable."""
_SHELL_KEYS = re.compile(
    r"^(?:core\.(?:pager|editor|sshcommand|fsmonitor|askpass|gitproxy)|diff\.external"
    r"|diff\..+\.(?:textconv|command)|filter\..+\.(?:clean|smudge|process)|merge\..+\.driver"
    r"|(?:merge|diff)tool\..+\.cmd|credential(?:\..+)?\.helper|sequence\.editor|pager\..+"
    r"|gpg(?:\..+)?\.program|uploadpack\.packobjectshook|remote\..+\.(?:uploadpack|receivepack)"
    r"|browser\..+\.cmd|man\..+\.cmd|interactive\.difffilter|sendemail\..*cmd)$",
    re.I,
)
_FORCE_KEYS = re.compile(r"^remote\..+\.(?:push|mirror)$", re.I)

SUB_CODE_OPTIONS: dict[str, frozenset[str]] = {
    "push": frozenset({"--receive-pack", "--exec"}),
    "fetch": frozenset({"--upload-pack"}),
    "pull": frozenset({"--upload-pack"}),
    "clone": frozenset({"--upload-pack", "-u", "--template", "-c", "--config"}),
    "ls-remote": frozenset({"--upload-pack"}),
    "archive": frozenset({"--exec"}),
    "difftool": frozenset({"-x", "--extcmd"}),
    "mergetool": frozenset(),
    "rebase": frozenset({"-x", "--exec"}),
    "grep": frozenset({"-O", "--open-files-in-pager"}),
    "send-email": frozenset({"--to-cmd", "--cc-cmd", "--sendmail-cmd", "--smtp-server"}),
    "filter-branch": frozenset({"--env-filter", "--tree-filter", "--index-filter",
                                "--parent-filter", "--msg-filter", "--commit-filter",
                                "--tag-name-filter"}),
    "diff": frozenset({"--ext-diff", "--textconv"}),
    "log": frozenset({"--ext-diff", "--textconv"}),
    "show": frozenset({"--ext-diff", "--textconv"}),
    "init": frozenset({"--template"}),
}
"""Subcommand options whose value is a command line (or, for switches like --ext-diff, that
run a program named in configuration)."""
_SWITCHES = frozenset({"--ext-diff", "--textconv", "-O", "--open-files-in-pager"})

KNOWN_SUBCOMMANDS = frozenset(
    [
        "add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch", "bundle",
        "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout",
        "checkout-index", "cherry", "cherry-pick", "citool", "clean", "clone", "column", "commit",
        "commit-graph", "commit-tree", "config", "count-objects", "credential", "describe", "diff",
        "diff-files", "diff-index", "diff-tree", "difftool", "fast-export", "fast-import", "fetch",
        "fetch-pack", "filter-branch", "fmt-merge-msg", "for-each-ref", "for-each-repo",
        "format-patch", "fsck", "gc", "get-tar-commit-id", "grep", "gui", "hash-object", "help",
        "hook", "index-pack", "init", "instaweb", "interpret-trailers", "log", "ls-files",
        "ls-remote", "ls-tree", "mailinfo", "mailsplit", "maintenance", "merge", "merge-base",
        "merge-file", "merge-index", "merge-tree", "mergetool", "mktag", "mktree",
        "multi-pack-index", "mv", "name-rev", "notes", "pack-objects", "pack-refs", "patch-id",
        "prune", "prune-packed", "pull", "push", "range-diff", "read-tree", "rebase", "reflog",
        "remote", "repack", "replace", "replay", "request-pull", "rerere", "reset", "restore",
        "rev-list", "rev-parse", "revert", "rm", "send-email", "send-pack", "shortlog", "show",
        "show-branch", "show-index", "show-ref", "sparse-checkout", "stage", "stash", "status",
        "stripspace", "submodule", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects",
        "update-index", "update-ref", "update-server-info", "var", "verify-commit", "verify-pack",
        "verify-tag", "version", "whatchanged", "worktree", "write-tree", "lfs", "p4", "svn",
        "daemon", "shell"
    ]
)

AliasLookup = Callable[[str], "Word | None"]
"""Reads `alias.NAME` from the git configuration in force (None when there is none; a
dynamic Word when it cannot be known)."""


@dataclass
class GitRun:
    """What one git invocation runs."""

    argv: tuple[Word, ...]
    """The git argv to match rules against: aliases expanded, a forced push made explicit."""
    scripts: list[Word] = field(default_factory=list)
    """Command lines git will run (`!` aliases, code configuration, --exec=...)."""
    problem: str = ""


def analyse_git(words: Sequence[Word], defined: Mapping[str, Word],
                lookup: AliasLookup | None = None, depth: int = 0) -> GitRun:
    """`defined`: aliases set earlier in the same command (`git config alias.x ...`)."""
    run = GitRun(tuple(words))
    config: dict[str, Word] = {}
    i = 1
    while i < len(words):
        word = words[i]
        text = word.text
        if word.may_be_option:
            run.problem = "git option computed at run time"
            return run
        if not text.startswith("-"):
            break
        opt, eq, _ = text.partition("=")
        if opt in GLOBAL_CODE and (eq or opt in ("-p", "--paginate") or opt == "--config-env"):
            if opt in ("-p", "--paginate"):
                i += 1
                continue
            run.problem = f"git {opt} runs programs named outside the command"
            return run
        if opt == "-c" or (text.startswith("-c") and len(text) > 2):
            value = words[i + 1] if text == "-c" and i + 1 < len(words) else Word(text[2:])
            _config_pair(value, config, run)
            i += 2 if text == "-c" else 1
            continue
        i += 2 if (opt in GLOBAL_VALUES and not eq) else 1
    if run.problem or i >= len(words):
        return run
    sub = words[i]
    if sub.dynamic:
        run.problem = "git subcommand computed at run time"
        return run
    alias = config.get(f"alias.{sub.text}".lower()) or defined.get(sub.text)
    if alias is None and sub.text not in KNOWN_SUBCOMMANDS and lookup is not None:
        alias = lookup(sub.text)
    if alias is not None:
        return _expand(words, i, alias, config, defined, lookup, depth, run)
    _sub_options(sub.text, words[i + 1 :], run)
    if sub.text == "config":
        _config_command(words[i + 1 :], run)
    if sub.text == "push" and _forced_by_config(config):
        run.argv = (*run.argv, Word("--force"))
    for key, value in config.items():
        if key.startswith("alias."):
            continue
        if _SHELL_KEYS.match(key):
            run.scripts.append(value)
        elif _CODE_KEYS.match(key):
            run.problem = run.problem or f"git -c {key} makes git run programs it names"
    return run


def _expand(words: Sequence[Word], i: int, alias: Word, config: dict[str, Word],
            defined: Mapping[str, Word], lookup: AliasLookup | None, depth: int,
            run: GitRun) -> GitRun:
    if alias.dynamic:
        run.problem = "git alias computed at run time"
        return run
    if alias.text.startswith("!"):
        run.scripts.append(Word(alias.text[1:] + " " + " ".join(w.text for w in words[i + 1 :])))
        return run
    if depth > 4:
        run.problem = "git aliases nested too deeply"
        return run
    import shlex

    try:
        expansion = [Word(t) for t in shlex.split(alias.text)]
    except ValueError:
        run.problem = "git alias does not split into words"
        return run
    prefix = [words[0], *[Word(f"-c{k}={v.text}") for k, v in config.items()]]
    inner = analyse_git([*prefix, *expansion, *words[i + 1 :]], defined, lookup, depth + 1)
    inner.scripts[:0] = run.scripts
    inner.problem = run.problem or inner.problem
    return inner


def _config_pair(value: Word, config: dict[str, Word], run: GitRun) -> None:
    key, eq, setting = value.text.partition("=")
    if value.dynamic and _CODE_KEYS.match(key):
        run.problem = "git -c sets code configuration computed at run time"
    config[key.lower() if not key.lower().startswith("alias.") else "alias." + key[6:]] = Word(
        setting if eq else "true", dynamic=value.dynamic)


def _forced_by_config(config: Mapping[str, Word]) -> bool:
    for key, value in config.items():
        if _FORCE_KEYS.match(key):
            text = value.text.strip()
            if key.endswith(".push") and text.startswith("+"):
                return True
            if key.endswith(".mirror") and text.lower() in ("true", "yes", "on", "1", ""):
                return True
    return False


def _sub_options(sub: str, args: Sequence[Word], run: GitRun) -> None:
    options = SUB_CODE_OPTIONS.get(sub)
    if sub == "bisect" and args and args[0].text == "run":
        run.scripts.append(Word(" ".join(w.text for w in args[1:]),
                                dynamic=any(w.dynamic for w in args[1:])))
    if sub == "submodule" and args and args[0].text == "foreach":
        rest = [w for w in args[1:] if w.text not in ("--recursive", "-q", "--quiet")]
        run.scripts.append(Word(" ".join(w.text for w in rest),
                                dynamic=any(w.dynamic for w in rest)))
    if not options:
        return
    for k, word in enumerate(args):
        opt, eq, attached = word.text.partition("=")
        if opt not in options:
            continue
        if opt in _SWITCHES and not eq:
            run.problem = run.problem or f"git {sub} {opt} runs a program named in configuration"
            continue
        if opt in ("-c", "--config"):
            value = Word(attached) if eq else (args[k + 1] if k + 1 < len(args) else Word(""))
            config: dict[str, Word] = {}
            _config_pair(value, config, run)
            for key, setting in config.items():
                if _SHELL_KEYS.match(key):
                    run.scripts.append(setting)
                elif _CODE_KEYS.match(key):
                    run.problem = run.problem or f"git {sub} -c {key} makes git run programs"
            continue
        if opt in ("--template",):
            run.problem = run.problem or f"git {sub} --template copies hooks that run later"
            continue
        run.scripts.append(Word(attached) if eq else (args[k + 1] if k + 1 < len(args)
                                                      else Word("")))


_CONFIG_VALUES = frozenset(("-f", "--file", "--blob", "--type", "--default", "--comment",
                            "--value", "--url"))
"""git config's options that take the next word (`git config --file F KEY VALUE`)."""


def _config_command(args: Sequence[Word], run: GitRun) -> None:
    """`git config [--global] KEY VALUE` (or `git config set KEY VALUE`) that installs code:
    the code is analysed now."""
    operands = operand_words(args, _CONFIG_VALUES)
    if operands and operands[0].text == "set":
        operands = operands[1:]
    if len(operands) < 2:
        return
    key, value = operands[0], operands[1]
    if key.dynamic:
        run.problem = "git config sets a key computed at run time"
        return
    name = key.text.lower()
    if name.startswith("alias."):
        if value.text.startswith("!") or value.dynamic:
            run.scripts.append(Word(value.text.lstrip("!"), dynamic=value.dynamic))
        return
    if _SHELL_KEYS.match(name):
        run.scripts.append(value)
    elif _CODE_KEYS.match(name):
        run.problem = run.problem or f"git config {name} makes git run programs it names"
    elif _FORCE_KEYS.match(name) and (value.text.startswith("+") or value.dynamic):
        run.problem = run.problem or f"git config {name} makes every later push forced"


def defined_alias(words: Sequence[Word]) -> tuple[str, Word] | None:
    """`git config [opts] alias.NAME VALUE` -> (NAME, VALUE), to expand later `git NAME`."""
    texts = [w for w in words[1:] if not w.text.startswith("-")]
    if len(texts) >= 3 and texts[0].text == "config" and texts[1].text.lower().startswith(
            "alias."):
        return texts[1].text[6:], texts[2]
    return None


_LISTING_OPTIONS = frozenset({"-z", "-c", "--cached", "-o", "--others", "--exclude-standard",
                              "-m", "--modified", "-d", "--deleted", "--error-unmatch"})
"""git ls-files options that leave its output a list of paths relative to cwd."""


def listed_files(words: Sequence[Word]) -> list[Word] | None:
    """What `git ls-files [PATHSPEC...]` prints, as paths known by their pattern (a
    pathspec's `*` crosses `/`; a directory names what is below it); None for any other
    git command, or output that is not just such paths."""
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        text = words[i].text
        i += 2 if (text in GLOBAL_VALUES and "=" not in text) else 1
    if i >= len(words) or words[i].text != "ls-files":
        return None
    specs: list[str] = []
    ended = False
    for word in words[i + 1 :]:
        if word.dynamic:
            return None
        if not ended and word.text == "--":
            ended = True
        elif not ended and word.text.startswith("-"):
            if word.text not in _LISTING_OPTIONS:
                return None
        elif word.text.startswith(":"):
            return None  # pathspec magic
        else:
            specs.append(word.text)
    patterns = [crossing(s) if any(c in s for c in "*?[") else f"{s.rstrip('/')}/**"
                for s in specs] or ["**"]
    return [Word(p, dynamic=True, pattern=p) for p in patterns]
