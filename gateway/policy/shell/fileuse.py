"""Which files a command reads and writes, from its argv, as data.

Each entry says what the operands are (read, written, or sources then a destination) and
which options name files. Redirections are the scanner's; code inside awk, sed and
interpreters reports its own files. A program not listed here is unknown: its operands and
option values are *possible* reads (a rule they match is uncertain).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gateway.policy.shell.globs import crossing
from gateway.policy.shell.words import Word

Mode = Literal["read", "write"]
Operands = Literal["read", "write", "none", "to-last", "pattern-then-read", "script-then-read",
                   "value-then-write", "in-out", "archive"]


@dataclass(frozen=True)
class FileUse:
    operands: Operands = "read"
    """read: every operand is read; write: written (created, changed, deleted); none: not
    files; to-last: sources read, the last operand written (cp, install, ln); in-out: the
    first read, the second written (uniq, xxd); pattern-then-read: the first operand is a
    pattern unless -e/-f gives it (grep); script-then-read: the first is a program text
    (awk, sed, jq); value-then-write: the first is a mode, an owner or an expression and
    the rest are written (chmod, chown, rename); archive: tar/zip (see `_archive`)."""
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()
    """Other options that take a value (so it is not mistaken for an operand)."""
    pattern_opts: frozenset[str] = frozenset()
    """Options that give the pattern/program, so every operand is a file (grep -e, sed -e)."""
    in_place: frozenset[str] = frozenset()
    """Options that make the operands written too (sed -i, perl -i)."""
    globs: bool = False
    """The program expands glob patterns in its operands itself (zip '*.c'): a quoted
    pattern is still a pattern."""
    pairs: frozenset[str] = frozenset()
    """Options that take a name and then a value (jq --arg NAME VALUE)."""
    pair_reads: frozenset[str] = frozenset()
    """Options that take a name and then a file that is read (jq --rawfile NAME FILE)."""
    value_word: str = ""
    """An option-like word that is the leading value operand (chmod -w FILE)."""


def _u(operands: Operands = "read", reads: str = "", writes: str = "", values: str = "",
       pattern: str = "", in_place: str = "", globs: bool = False, pairs: str = "",
       pair_reads: str = "", value_word: str = "") -> FileUse:
    return FileUse(operands, frozenset(reads.split()), frozenset(writes.split()),
                   frozenset(values.split()), frozenset(pattern.split()),
                   frozenset(in_place.split()), globs, frozenset(pairs.split()),
                   frozenset(pair_reads.split()), value_word)


_READERS = ("cat tac head tail less more most nl wc base64 base32 basenc od hexdump strings "
            "md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum file "
            "diff diff3 sdiff cmp comm join paste fold fmt pr expand unexpand rev shuf column "
            "iconv zcat zless zmore bzcat xzcat zstdcat lzcat view vimdiff bat batcat")
"""Shells, `source` and interpreters are not here: the scanner records the script they read."""
_WRITERS = ("rm unlink rmdir shred touch truncate chmod chown chgrp mkdir mkfifo mknod tee "
            "vi vim nvim nano emacs ed ex gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd lz4 "
            "sponge")

_BUILTINS = ("read mapfile readarray let getopts hash ulimit umask shift break continue "
             "return exit builtin exec trap eval bg fg disown suspend times caller complete "
             "compgen enable fc bind popd dirs logout readonly typeset")

FILE_USES: dict[str, FileUse] = {
    **{name: _u("read") for name in _READERS.split()},
    **{name: _u("write") for name in _WRITERS.split()},
    "head": _u("read", values="-n --lines -c --bytes"),
    "tail": _u("read", values="-n --lines -c --bytes -s --sleep-interval --pid"),
    "sort": _u("read", writes="-o --output", values="-k --key -t --field-separator -S "
               "--buffer-size -T --temporary-directory --parallel --batch-size"),
    "cut": _u("read", values="-d --delimiter -f --fields -b --bytes -c --characters "
              "--output-delimiter"),
    "uniq": _u("in-out", values="-f --skip-fields -s --skip-chars -w --check-chars"),
    "xxd": _u("in-out", values="-c -cols -g -groupsize -l -len -s -seek -o -offset"),
    "tr": _u("none"),
    "grep": _u("pattern-then-read", reads="-f --file", pattern="-e --regexp -f --file",
               values="-m --max-count -A -B -C --after-context --before-context --context "
               "--include --exclude --exclude-dir --color --colour --label -d --devices "
               "-D --binary-files"),
    "egrep": _u("pattern-then-read", reads="-f --file", pattern="-e --regexp -f --file",
                values="-m -A -B -C --include --exclude"),
    "fgrep": _u("pattern-then-read", reads="-f --file", pattern="-e --regexp -f --file",
                values="-m -A -B -C --include --exclude"),
    "rg": _u("pattern-then-read", reads="-f --file --ignore-file", pattern="-e --regexp -f",
             values="-g --glob -t --type -T --type-not -m --max-count -A -B -C -j --threads "
             "--color --colors -M --max-columns"),
    "ag": _u("pattern-then-read", values="-G --file-search-regex -A -B -C -m"),
    "ack": _u("pattern-then-read", values="--type -A -B -C -m"),
    "awk": _u("script-then-read", reads="-f --file", pattern="-f --file -e --source",
              values="-F -v --assign --field-separator"),
    "gawk": _u("script-then-read", reads="-f --file", pattern="-f --file -e --source",
               values="-F -v --assign --field-separator"),
    "mawk": _u("script-then-read", reads="-f", pattern="-f", values="-F -v"),
    "sed": _u("script-then-read", reads="-f --file", pattern="-e --expression -f --file",
              values="-l --line-length", in_place="-i --in-place"),
    "yq": _u("script-then-read", values="-o --output-format -I --indent"),
    "cp": _u("to-last", values="-S --suffix --backup --preserve --no-preserve --reflink "
             "--sparse", writes="-t --target-directory"),
    "mv": _u("to-last", values="-S --suffix --backup", writes="-t --target-directory"),
    "install": _u("to-last", values="-m --mode -o --owner -g --group -S --suffix",
                  writes="-t --target-directory"),
    "ln": _u("to-last", values="-S --suffix", writes="-t --target-directory"),
    "link": _u("to-last"),
    "rsync": _u("to-last", reads="--files-from --exclude-from --include-from",
                values="-e --rsh --rsync-path --exclude --include --filter -f --chmod "
                "--chown --bwlimit --timeout -B --block-size"),
    "scp": _u("to-last", reads="-F -i", values="-P -o -c -l -J -S"),
    "dd": _u("none"),
    "tar": _u("archive", values="-b --blocking-factor -C --directory --exclude -T "
              "--files-from -X --exclude-from -I --use-compress-program --owner --group "
              "--mode --transform --xform -H --format"),
    "zip": _u("archive", values="-x --exclude -i --include -P --password -b --temp-path",
              globs=True),
    "7z": _u("archive", values="-p -o -w -x -i -t -m", globs=True),
    "7za": _u("archive", values="-p -o -w -x -i -t -m", globs=True),
    "7zz": _u("archive", values="-p -o -w -x -i -t -m", globs=True),
    "unzip": _u("archive", values="-d -x -P"),
    "curl": _u("none", reads="-T --upload-file -K --config --cacert --cert --key -b --cookie "
               "--netrc-file --data-binary", writes="-o --output -c --cookie-jar -D "
               "--dump-header --trace --trace-ascii --libcurl --stderr",
               values="-X --request -H --header -u --user -A --user-agent -e --referer -x "
               "--proxy -m --max-time -w --write-out --connect-timeout -r --range --url "
               "-d --data --data-raw --data-urlencode -F --form --form-string --retry"),
    "wget": _u("none", reads="-i --input-file --post-file --body-file --load-cookies "
               "--certificate --private-key --ca-certificate",
               writes="-O --output-document -o --output-file -a --append-output "
               "--save-cookies -P --directory-prefix",
               values="-U --user-agent --header -e --execute -t --tries -T --timeout "
               "--user --password --post-data --method --body-data"),
    "openssl": _u("none", reads="-in -key -cert -CAfile -inkey -passin", writes="-out",
                  values="-pass -passout -subj -days -newkey -aes256 -md"),
    "gpg": _u("read", writes="-o --output", values="-r --recipient -u --local-user "
              "--default-key --passphrase"),
    "xargs": _u("none", reads="-a --arg-file"),
    "find": _u("none", writes="-fprint -fprint0 -fprintf -fls", values="-name -iname -path "
               "-ipath -type -maxdepth -mindepth -newer -perm -size -user -group -mtime "
               "-mmin -regex -iregex -printf -wholename -exec -execdir -ok -okdir"),
    "git": _u("none", writes="--output -o"),
    "make": _u("none", reads="-f --file --makefile", values="-C --directory -j --jobs "
               "-I --include-dir -o --old-file -W --what-if"),
    **{name: _u("none") for name in _BUILTINS.split()},
    "ls": _u("none"), "dir": _u("none"), "tree": _u("none"), "stat": _u("none"),
    "du": _u("none"), "df": _u("none"), "realpath": _u("none"), "readlink": _u("none"),
    "basename": _u("none"), "dirname": _u("none"), "echo": _u("none"), "printf": _u("none"),
    "test": _u("none"), "[": _u("none"), "[[": _u("none"), "cd": _u("none"),
    "pushd": _u("none"), "which": _u("none"), "type": _u("none"), "command": _u("none"),
    "mktemp": _u("none"), "kill": _u("none"), "sleep": _u("none"), "true": _u("none"),
    "false": _u("none"), ":": _u("none"), "export": _u("none"), "declare": _u("none"),
    "local": _u("none"), "unset": _u("none"), "set": _u("none"), "shopt": _u("none"),
    "alias": _u("none"), "date": _u("none"), "env": _u("none"), "printenv": _u("none"),
    "pwd": _u("none"), "id": _u("none"), "whoami": _u("none"), "uname": _u("none"),
    "hostname": _u("none"), "ps": _u("none"), "pgrep": _u("none"), "pkill": _u("none"),
    "seq": _u("none"), "yes": _u("none"), "expr": _u("none"), "wait": _u("none"),
    "jobs": _u("none"), "history": _u("none"), "man": _u("none"), "help": _u("none"),
    "npm": _u("none"), "npx": _u("none"), "pnpm": _u("none"), "yarn": _u("none"),
    "pip": _u("none"), "pip3": _u("none"), "uv": _u("none"), "cargo": _u("none"),
    "go": _u("none"), "docker": _u("none"), "kubectl": _u("none"), "helm": _u("none"),
    "terraform": _u("none"), "pytest": _u("none"), "ruff": _u("none"), "mypy": _u("none"),
    "black": _u("none"), "tox": _u("none"), "eslint": _u("none"), "prettier": _u("none"),
    "tsc": _u("none"), "jest": _u("none"), "apt-get": _u("none"), "apt": _u("none"),
    "brew": _u("none"), "systemctl": _u("none"), "journalctl": _u("none"),
    "ping": _u("none"), "dig": _u("none"), "ssh": _u("none", reads="-F -i"),
    "sudo": _u("none"), "timeout": _u("none"), "nice": _u("none"), "nohup": _u("none"),
    "tmux": _u("none"), "watch": _u("none"), "chroot": _u("none"), "flock": _u("none"),
    # -- arguments that are not files: modes, owners, dates, numbers, PIDs, expressions --
    "chmod": _u("value-then-write", values="--reference", pattern="--reference",
                value_word=r"-[rwxXstugoa=+,-]+"),
    "chown": _u("value-then-write", values="--reference --from", pattern="--reference"),
    "chgrp": _u("value-then-write", values="--reference", pattern="--reference"),
    "rename": _u("value-then-write"),  # perl's rename: an expression, then the files
    "touch": _u("write", values="-d --date -t -r --reference"),
    "truncate": _u("write", values="-s --size -r --reference"),
    "mkdir": _u("write", values="-m --mode --context"),
    "jq": _u("script-then-read", reads="-f --from-file", values="--indent --tab",
             pairs="--arg --argjson", pair_reads="--rawfile --slurpfile"),
    "iconv": _u("read", writes="-o --output", values="-f --from-code -t --to-code"),
    "shuf": _u("read", writes="-o --output", values="-n --head-count -i --input-range "
               "--random-source"),
    "split": _u("in-out", values="-l --lines -b --bytes -C --line-bytes -n --number -a "
                "--suffix-length --additional-suffix -t --separator"),
    "column": _u("read", values="-s --separator -c --output-width -o --output-separator "
                 "-N --table-columns -R --table-right"),
    "base64": _u("read", values="-w --wrap"), "base32": _u("read", values="-w --wrap"),
    "numfmt": _u("none"), "factor": _u("none"), "usleep": _u("none"),
    "top": _u("none"), "htop": _u("none"), "renice": _u("none"), "killall": _u("none"),
    "pidof": _u("none"), "pstree": _u("none"), "pmap": _u("none"), "lsof": _u("none"),
    "getent": _u("none"), "groups": _u("none"), "who": _u("none"), "w": _u("none"),
    "uptime": _u("none"), "nproc": _u("none"), "free": _u("none"), "cal": _u("none"),
    "tput": _u("none"), "stty": _u("none"), "tty": _u("none"), "locale": _u("none"),
    "getconf": _u("none"), "uuidgen": _u("none"), "nc": _u("none"), "ncat": _u("none"),
    "nslookup": _u("none"), "host": _u("none"), "traceroute": _u("none"),
    "ss": _u("none"), "netstat": _u("none"), "ip": _u("none"), "ifconfig": _u("none"),
    "whereis": _u("none"), "whatis": _u("none"), "apropos": _u("none"), "tldr": _u("none"),
    "info": _u("none"), "fg": _u("none"), "bg": _u("none"), "disown": _u("none"),
}

GIT_PATH_SUBCOMMANDS: dict[str, Mode] = {
    "add": "read", "rm": "write", "mv": "write", "checkout": "write", "restore": "write",
    "show": "read", "blame": "read", "cat-file": "read", "log": "read", "diff": "read",
    "apply": "read", "am": "read", "hash-object": "read", "stash": "read",
    "update-index": "read", "grep": "read", "archive": "read",
}
"""git subcommands whose operands (after `--`, or `rev:path`) are files, and how."""


def file_uses(name: str, words: Sequence[Word]) -> list[tuple[Mode, Word]] | None:
    """(mode, path) for each file `words` (argv, name first) names; None for a program
    the table does not know (the caller treats its arguments as possible reads)."""
    if name == "dd":
        return _dd(words)
    if name == "git":
        return _git_trees(_git(words), words)
    use = FILE_USES.get(name)
    if use is None:
        return None
    found: list[tuple[Mode, Word]] = []
    operands: list[Word] = []
    pattern_given = False
    in_place = False
    i = 1
    ended = False
    while i < len(words):
        word, text = words[i], words[i].text
        following = words[i + 1] if i + 1 < len(words) else None
        i += 1
        if ended or not text.startswith("-") or text == "-":
            operands.append(word)
            continue
        if text == "--":
            ended = True
            continue
        if use.value_word and re.fullmatch(use.value_word, text):
            operands.append(word)  # chmod -w FILE: the mode
            continue
        if text in use.pairs or text in use.pair_reads:
            if text in use.pair_reads and i + 1 < len(words):
                found.append(("read", words[i + 1]))
            i += 2
            continue
        opt, eq, attached = text.partition("=")
        value = Word(attached, dynamic=word.dynamic) if eq else None
        if not eq and not opt.startswith("--") and len(opt) > 2 and opt[:2] in (
                use.reads | use.writes | use.values | use.pattern_opts):
            opt, value = opt[:2], Word(opt[2:], dynamic=word.dynamic)
        if opt in use.in_place or (opt[:2] in use.in_place and not opt.startswith("--")):
            in_place = True
        takes = opt in use.reads or opt in use.writes or opt in use.values or (
            opt in use.pattern_opts)
        if takes and value is None and following is not None:
            value, i = following, i + 1
        if opt in use.pattern_opts:
            pattern_given = True
        if value is None:
            continue
        if opt in use.reads:
            found.append(("read", _at_file(name, value)))
        elif opt in use.writes:
            found.append(("write", value))
        elif name == "curl" and opt in ("-d", "--data", "--data-urlencode", "-F", "--form"):
            path = _curl_file(value)
            if path is not None:
                found.append(("read", path))
    if use.globs:
        operands = [_pattern(w) for w in operands]
    if name in ("ln", "cp") and _symbolic(words) and len(operands) > 1:
        operands = [*(_linked(w, operands[-1]) for w in operands[:-1]), operands[-1]]
    named = _operands(use, name, operands, pattern_given, in_place)
    found.extend(named)
    if _recursive(name, use, words):
        found.extend(_trees(name, use, words, operands, named, pattern_given))
    return found


_RECURSIVE_ALWAYS = frozenset(["rg", "ag", "ack", "tar", "7z", "7za", "7zz", "mv"])
"""Programs that act on everything under a directory operand whatever their options (tar
unless --no-recursion; mv moves the whole tree)."""
_RECURSIVE_OPTIONS: dict[str, tuple[frozenset[str], str]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep"), (frozenset((
        "--recursive", "--dereference-recursive", "--directories=recurse")), "rR")),
    "cp": (frozenset(("--recursive", "--archive")), "rRa"),
    "rsync": (frozenset(("--recursive", "--archive")), "ra"),
    "scp": (frozenset(), "r"),
    "zip": (frozenset(("--recurse-paths",)), "rR"),
    "diff": (frozenset(("--recursive",)), "r"),
    "rm": (frozenset(("--recursive",)), "rR"),
    **dict.fromkeys(("chmod", "chown", "chgrp"), (frozenset(("--recursive",)), "R")),
}
"""Programs that act on everything under a directory operand given one of these options
(long, or short letters alone or in a cluster: `-rn`)."""
_SEARCHERS = frozenset(["grep", "egrep", "fgrep", "rg", "ag", "ack"])
"""Recursive searchers search the working directory when given no path."""


def _recursive(name: str, use: FileUse, words: Sequence[Word]) -> bool:
    """Whether the command acts on whole trees under its directory operands."""
    if name in _RECURSIVE_ALWAYS:
        return not any(w.text == "--no-recursion" for w in words[1:])
    options = _RECURSIVE_OPTIONS.get(name)
    if options is None:
        return False
    longs, letters = options
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        if text == "--":
            break
        if text in longs or (text in ("-d", "--directories") and i + 1 < len(words)
                             and words[i + 1].text == "recurse"):
            return True
        if text.startswith("-") and not text.startswith("--"):
            for letter in text[1:]:
                if letter in letters:
                    return True
                if _takes_value(use, f"-{letter}"):
                    break  # the rest of the cluster is that option's value
    return False


def _takes_value(use: FileUse, option: str) -> bool:
    return (option in use.reads or option in use.writes or option in use.values
            or option in use.pattern_opts)


def _trees(name: str, use: FileUse, words: Sequence[Word], operands: list[Word],
           named: list[tuple[Mode, Word]], pattern_given: bool) -> list[tuple[Mode, Word]]:
    """What a recursive command acts on beyond its operands: everything under each one
    (`grep -r TOKEN .` reads ./.env, `rm -rf .github` removes its workflows), and where a
    copied tree lands, all of it. A searcher given no path searches `.`."""
    files = operands if pattern_given or use.operands not in (
        "pattern-then-read", "script-then-read", "value-then-write") else operands[1:]
    visible = name in ("rg", "ag") and not _hidden_too(name, words)
    only = _searched_names(name, words)
    if name in _SEARCHERS and not files:
        return [("read", _tree(Word("."), visible, glob)) for glob in only]
    given = {id(w) for w in operands}
    if name in ("cp", "mv", "rsync", "scp") and operands:
        # The destination holds what lands inside it (its `_inside` words), not all of it;
        # rsync --delete removes what is there.
        if not any(w.text.startswith("--delete") for w in words[1:]):
            given.discard(id(operands[-1]))
        given |= {id(w) for mode, w in named if mode == "write"} - {id(operands[-1])}
    return [(mode, _tree(w, visible, glob)) for mode, w in named
            if not w.dynamic and id(w) in given for glob in only]


def _searched_names(name: str, words: Sequence[Word]) -> list[str]:
    """The base names a recursive search reads (`grep -r --include='*.py'`, `rg -g '*.py'`:
    those only; a glob computed at run time, or none given: any)."""
    options = {"grep": ("--include",), "egrep": ("--include",), "fgrep": ("--include",),
               "rg": ("-g", "--glob", "--iglob")}.get(name, ())
    globs: list[str] = []
    for i, word in enumerate(words[1:], start=1):
        opt, eq, value = word.text.partition("=")
        if opt not in options:
            continue
        if not eq:
            if i + 1 >= len(words):
                continue
            word = words[i + 1]
            value = word.text
        if word.dynamic or value.startswith("!") or "/" in value or opt == "--iglob":
            return ["*"]  # an exclusion, a path glob, a case-blind one: any name may be read
        globs.append(value)
    return globs or ["*"]


def _hidden_too(name: str, words: Sequence[Word]) -> bool:
    """Whether rg or ag reads hidden files too (by default they skip them: `rg TOKEN .`
    does not read ./.env)."""
    texts = [w.text for w in words[1:]]
    if "--hidden" in texts or "--unrestricted" in texts or "-." in texts:
        return True
    short = "".join(t[1:] for t in texts if t.startswith("-") and not t.startswith("--"))
    return short.count("u") >= (2 if name == "rg" else 1) or "." in short


def _tree(word: Word, visible: bool = False, glob: str = "*") -> Word:
    """Everything under `word` whose name matches `glob` (`visible`: and does not begin
    with a dot), a name only known when the command runs."""
    last = "" if glob == "*" and not visible else "/" + (
        "[!.]" + glob if visible and glob.startswith("*") else glob)
    below = f"{word.text.rstrip('/')}/**{last}"
    return Word(word.text, dynamic=True, lead_dynamic=word.lead_dynamic, globby=word.globby,
                pattern=below, tree=True)


def _symbolic(words: Sequence[Word]) -> bool:
    return any(w.text in ("--symbolic", "--symbolic-link") or (
        w.text.startswith("-") and not w.text.startswith("--") and "s" in w.text[1:])
        for w in words[1:])


def _linked(target: Word, link: Word) -> Word:
    """A symbolic link to `target` makes everything under it reachable under another name
    (`ln -s ~ h; cat h/.ssh/id_rsa`): the link reads it all. A relative target is relative
    to the link's directory."""
    if target.dynamic and not re.fullmatch(_REFERENCE_ONLY, target.text):
        return target
    text = target.text
    if not text.startswith(("/", "~")) and "/" in link.text.rstrip("/"):
        base = link.text.rstrip("/").rsplit("/", 1)[0]
        text = f"{base}/{text}"
    below = f"{text.rstrip('/')}/**"
    return Word(text, dynamic=True, pattern=below)


def _pattern(word: Word) -> Word:
    """An operand the program globs itself: quoted or not, it is a pattern, matched by the
    program's rules (git's and zip's `*` match a leading dot and cross `/`), so the names
    it stands for are only known when it runs."""
    if word.dynamic or _GLOB.isdisjoint(word.text):
        return word
    return Word(word.text, dynamic=True, lead_dynamic=word.lead_dynamic, globby=word.globby,
                pattern=crossing(word.text))


_GLOB = frozenset("*?[")
_REFERENCE_ONLY = r"(?:[^$`]|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)*"
"""Text whose only expansions are plain $NAME references (resolved once the scan ends)."""


def _operands(use: FileUse, name: str, operands: list[Word], pattern_given: bool,
              in_place: bool) -> list[tuple[Mode, Word]]:
    kind = use.operands
    if kind in ("pattern-then-read", "script-then-read", "value-then-write") and (
            not pattern_given):
        operands = operands[1:]
    if kind == "none":
        return []
    if kind in ("write", "value-then-write"):
        return [("write", w) for w in operands]
    if kind == "to-last":
        if len(operands) < 2:
            return [("write", w) for w in operands] if name in ("touch",) else []
        dest = operands[-1]
        # The destination may be a directory: each source then lands inside it.
        inside: list[tuple[Mode, Word]] = [
            ("write", _inside(dest, w)) for w in operands[:-1]]
        return [*(("read", w) for w in operands[:-1]), *(
            ("write", w) for w in operands[:-1] if name == "mv"), ("write", dest), *inside]
    if kind == "in-out":
        return [("read", w) for w in operands[:1]] + [("write", w) for w in operands[1:2]]
    if kind == "archive":
        return _archive(name, operands)
    found: list[tuple[Mode, Word]] = [("read", w) for w in operands]
    if in_place:
        found += [("write", w) for w in operands]
    return found


def _inside(dest: Word, source: Word) -> Word:
    """Where `source` lands in the directory `dest`: under its last name."""
    name = source.text.rstrip("/").rsplit("/", 1)[-1]
    dynamic = dest.dynamic or (source.dynamic and not source.pattern and (
        not name or any(c in name for c in "$`")))
    return Word(dest.text.rstrip("/") + "/" + name, dynamic=dynamic,
                lead_dynamic=dest.lead_dynamic)


def _archive(name: str, operands: list[Word]) -> list[tuple[Mode, Word]]:
    """tar/zip/unzip: the archive and the members; which is read depends on the mode,
    which these tables do not follow, so both are read and the archive may be written."""
    return [("read", w) for w in operands] + [("write", w) for w in operands[:1]]


def _at_file(name: str, value: Word) -> Word:
    if name == "curl" and value.text.startswith("@"):
        return Word(value.text[1:], dynamic=value.dynamic)
    return value


def _curl_file(value: Word) -> Word | None:
    """curl -d @FILE, -F name=@FILE or name=<FILE read a file."""
    text = value.text
    if text.startswith("@"):
        return Word(text[1:], dynamic=value.dynamic)
    _, eq, rest = text.partition("=")
    if eq and rest[:1] in ("@", "<"):
        return Word(rest[1:].split(";", 1)[0], dynamic=value.dynamic)
    return None


def _dd(words: Sequence[Word]) -> list[tuple[Mode, Word]]:
    found: list[tuple[Mode, Word]] = []
    for word in words[1:]:
        key, eq, value = word.text.partition("=")
        if eq and key in ("if", "of"):
            found.append(("read" if key == "if" else "write", Word(value, dynamic=word.dynamic)))
    return found


def _git(words: Sequence[Word]) -> list[tuple[Mode, Word]]:
    found: list[tuple[Mode, Word]] = []
    sub = ""
    after_dashdash = False
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        if text.startswith(("--output=", "-o")) and sub in ("diff", "log", "show",
                                                              "format-patch", "archive"):
            value = text.partition("=")[2] if text.startswith("--output=") else text[2:]
            target = Word(value) if value else (words[i + 1] if i + 1 < len(words) else None)
            if target is not None:
                found.append(("write", target))
            continue
        if not sub:
            if not text.startswith("-") and words[i - 1].text not in ("-C", "-c", "--git-dir",
                                                                     "--work-tree"):
                sub = text
            continue
        if text == "--":
            after_dashdash = True
            continue
        mode = GIT_PATH_SUBCOMMANDS.get(sub)
        if mode is None or text.startswith("-"):
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
            found.append((mode, _pattern(word)))
    return found


def _git_trees(found: list[tuple[Mode, Word]], words: Sequence[Word]
               ) -> list[tuple[Mode, Word]]:
    """`git rm -r DIR` removes everything under DIR (but with --cached); `git clean` the
    untracked files under its pathspecs, or the whole working tree, ignored files too with -x
    (but with -n)."""
    texts = [w.text for w in words[1:]]
    sub = next((t for t in texts if not t.startswith("-")), "")
    if sub == "rm" and "--cached" not in texts and any(t in ("-r", "--recursive") or (
            t.startswith("-") and not t.startswith("--") and "r" in t[1:]) for t in texts):
        return found + [(mode, _tree(w)) for mode, w in found if not w.dynamic]
    if sub == "clean" and not any(t in ("--dry-run", "-n") or (
            t.startswith("-") and not t.startswith("--") and "n" in t[1:]) for t in texts):
        after = texts[texts.index("clean") + 1:]
        paths = [w for w in words[len(words) - len(after):] if not w.text.startswith("-")]
        return found + [("write", _tree(w)) for w in paths or [Word(".")] if not w.dynamic]
    return found


# -- files a command creates -------------------------------------------------------------
_CREATES_NOTHING = frozenset((
    f"{_READERS} {_BUILTINS} ls dir vdir tree stat du df realpath readlink basename dirname "
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
    # everything under it: see _linked)
    "cp": ("-r", "-R", "-a", "--recursive", "--archive", "-t", "--target-directory"),
    "mv": ("-t", "--target-directory"),
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
