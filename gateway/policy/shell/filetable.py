"""Which files each known program reads and writes, as data: what its operands are (read,
written, or sources then a destination, ...) and which options name files or take values;
the git subcommands whose operands are files."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["read", "write"]
Operands = Literal["read", "write", "edit", "none", "to-last", "pattern-then-read",
                   "script-then-read", "value-then-write", "in-out", "archive"]


@dataclass(frozen=True)
class FileUse:
    operands: Operands = "read"
    """read: every operand is read; write: written (created, changed, deleted); edit: read
    and written (editors, compressors: `ed -s F <<< ,p` prints F, `gzip -c F` holds it); none:
    not files; to-last: sources read, the last operand written (cp, install, ln); in-out: the
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
    lists: frozenset[str] = frozenset()
    """Options whose value is a file of names the program then reads (tar -T F): the names
    are only known when it runs. `-` or an option given no value: from stdin."""

    def takes_value(self, option: str) -> bool:
        """Whether the option takes a value (a file or not)."""
        return (option in self.reads or option in self.writes or option in self.values
                or option in self.pattern_opts or option in self.lists)


def _u(operands: Operands = "read", reads: str = "", writes: str = "", values: str = "",
       pattern: str = "", in_place: str = "", globs: bool = False, pairs: str = "",
       pair_reads: str = "", value_word: str = "", lists: str = "") -> FileUse:
    return FileUse(operands, frozenset(reads.split()), frozenset(writes.split()),
                   frozenset(values.split()), frozenset(pattern.split()),
                   frozenset(in_place.split()), globs, frozenset(pairs.split()),
                   frozenset(pair_reads.split()), value_word, frozenset(lists.split()))


READERS = ("cat tac head tail less more most nl wc base64 base32 basenc od hexdump strings "
           "md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum file "
           "diff diff3 sdiff cmp comm join paste fold fmt pr expand unexpand rev shuf column "
           "iconv zcat zless zmore bzcat xzcat zstdcat lzcat view vimdiff bat batcat")
"""Shells, `source` and interpreters are not here: the scanner records the script they read."""
_CHECKERS = ("yamllint actionlint shellcheck hadolint kubeval kubeconform cspell vale "
             "editorconfig-checker act code subl xdg-open")
"""Programs that read the files they are given and have no mode that changes them: linters,
`act` (runs workflows), and the commands that open a file in a desktop editor, where the
agent does not type. Those with such a mode (`markdownlint --fix`, `pre-commit`, `codespell
-w`) stay unknown programs, whose arguments may be written."""
_WRITERS = "rm unlink rmdir shred touch truncate chmod chown chgrp mkdir mkfifo mknod tee sponge"
_EDITORS = ("vi vim nvim nano emacs ed ex gzip gunzip bzip2 bunzip2 xz unxz zstd unzstd lz4 "
            "lzma unlzma brotli")

BUILTINS = ("read mapfile readarray let getopts hash ulimit umask shift break continue "
            "return exit builtin exec trap eval bg fg disown suspend times caller complete "
            "compgen enable fc bind popd dirs logout readonly typeset")

_PIP = _u("none", reads="-r --requirement -c --constraint --cert --client-cert",
          writes="--log --log-file --report -t --target --prefix --root -d --dest --src",
          values="-i --index-url --extra-index-url --python-version --platform "
                 "--implementation --abi --only-binary --no-binary --progress-bar")

FILE_USES: dict[str, FileUse] = {
    **{name: _u("read") for name in READERS.split()},
    **{name: _u("write") for name in _WRITERS.split()},
    **{name: _u("edit") for name in _EDITORS.split()},
    **{name: _u("read") for name in _CHECKERS.split()},
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
    "yq": _u("script-then-read", values="-o --output-format -I --indent",
             in_place="-i --inplace"),
    "cp": _u("to-last", values="-S --suffix --backup --preserve --no-preserve --reflink "
             "--sparse", writes="-t --target-directory"),
    "mv": _u("to-last", values="-S --suffix --backup", writes="-t --target-directory"),
    "install": _u("to-last", values="-m --mode -o --owner -g --group -S --suffix",
                  writes="-t --target-directory"),
    "ln": _u("to-last", values="-S --suffix", writes="-t --target-directory"),
    "link": _u("to-last"),
    "rsync": _u("to-last", reads="--exclude-from --include-from", lists="--files-from",
                values="-e --rsh --rsync-path --exclude --include --filter -f --chmod "
                "--chown --bwlimit --timeout -B --block-size"),
    "scp": _u("to-last", reads="-F -i", values="-P -o -c -l -J -S"),
    "diff": _u("read", reads="--from-file --to-file -X --exclude-from",
               values="-C -U --context --unified "
               "--label -L -x --exclude -I --ignore-matching-lines "
               "--line-format --tabsize --width -W"),
    "dd": _u("none"),
    "tar": _u("archive", reads="-X --exclude-from", lists="-T --files-from",
              values="-b --blocking-factor -C --directory --exclude -I "
              "--use-compress-program --owner --group --mode --transform --xform -H --format"),
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
    "find": _u("none", reads="-files0-from", writes="-fprint -fprint0 -fprintf -fls",
               values="-name -iname -path "
               "-ipath -type -maxdepth -mindepth -newer -perm -size -user -group -mtime "
               "-mmin -regex -iregex -printf -wholename -exec -execdir -ok -okdir"),
    "git": _u("none", writes="--output -o"),
    "make": _u("none", reads="-f --file --makefile", values="-C --directory -j --jobs "
               "-I --include-dir -o --old-file -W --what-if"),
    **{name: _u("none") for name in BUILTINS.split()},
    "ls": _u("none"), "dir": _u("none"), "stat": _u("none"),
    "tree": _u("none", values="-L -P -I --charset -o --filelimit --timefmt"),
    "du": _u("none"), "df": _u("none"), "realpath": _u("none"), "readlink": _u("none"),
    "basename": _u("none"), "dirname": _u("none"), "echo": _u("none"), "printf": _u("none"),
    "test": _u("none"), "[": _u("none"), "[[": _u("none"), "cd": _u("none"),
    "pushd": _u("none"), "which": _u("none"), "type": _u("none"), "command": _u("none"),
    "mktemp": _u("none"), "kill": _u("none"), "sleep": _u("none"), "true": _u("none"),
    "false": _u("none"), ":": _u("none"), "export": _u("none"), "declare": _u("none"),
    "local": _u("none"), "unset": _u("none"), "set": _u("none"), "shopt": _u("none"),
    "alias": _u("none"), "date": _u("none", reads="-f --file -r --reference"),
    "env": _u("none"), "printenv": _u("none"),
    "pwd": _u("none"), "id": _u("none"), "whoami": _u("none"), "uname": _u("none"),
    "hostname": _u("none", reads="-F --file"), "ps": _u("none"), "pgrep": _u("none"),
    "pkill": _u("none"),
    "seq": _u("none"), "yes": _u("none"), "expr": _u("none"), "wait": _u("none"),
    "jobs": _u("none"), "history": _u("read", values="-d -s -p"), "bind": _u("none", reads="-f"),
    "man": _u("none", values="-P -M -S -L -C -p -E"),
    "help": _u("none"),
    # Developer tools whose operands are no files, with the options that name one: what
    # they read they print or send on (`pip install -r F` shows a line it cannot parse,
    # `docker run --env-file F` hands F to the container, `kubectl create secret
    # --from-file F -o yaml` prints it). npm, pnpm, yarn, uv and cargo are not here: their
    # arguments may be files, so they are unknown programs. Formatters: formatters.py.
    "pip": _PIP, "pip3": _PIP,
    "go": _u("none", reads="-modfile -overlay -pgo -C", writes="-o -coverprofile "
             "-cpuprofile -memprofile -blockprofile -mutexprofile -trace -outputdir",
             values="-ldflags -gcflags -asmflags -tags -run -bench -count -timeout -p "
             "-covermode -coverpkg -mod -buildmode -compiler -exec -toolexec -X"),
    "docker": _u("none", reads="--env-file -f --file --label-file --config",
                 writes="--cidfile --iidfile -o --output",
                 values="-v --volume --mount -e --env -p --publish -w --workdir --name "
                        "--network -t --tag -u --user --entrypoint --platform -l --label "
                        "--build-arg --target --format --filter -m --memory --cpus"),
    "kubectl": _u("none", reads="-f --filename --kubeconfig --from-file --from-env-file -k "
                  "--kustomize --client-key --client-certificate --certificate-authority "
                  "--token-file", values="-n --namespace -o --output -l --selector "
                  "--context --cluster --user -c --container --type --image"),
    "helm": _u("none", reads="-f --values --set-file --kubeconfig --ca-file --cert-file "
               "--key-file", values="-n --namespace --set --set-string --version "
               "--kube-context -o --output --repo"),
    "terraform": _u("none", reads="-var-file -chdir -state -backend-config",
                    writes="-out -state-out -backup", values="-var -target -lock-timeout"),
    "pytest": _u("read", reads="-c --rootdir --confcutdir", writes="--junitxml --junit-xml "
                 "--result-log --html", values="-k -m -p -n --maxfail --tb --durations "
                 "-o --override-ini --cov --cov-report --log-level --basetemp"),
    "mypy": _u("read", reads="--config-file", writes="--junit-xml --cache-dir",
               values="-p --package -m --module --python-version --platform --exclude "
                      "--always-true --always-false --enable-error-code "
                      "--disable-error-code"),
    "tsc": _u("read", reads="-p --project", writes="--outDir --outFile --out "
              "--declarationDir --tsBuildInfoFile", values="--target -t --module -m --lib "
              "--jsx --moduleResolution"),
    "jest": _u("none", reads="-c --config", writes="--outputFile --coverageDirectory"),
    "tox": _u("none", reads="-c --conf", values="-e --env -p --parallel"),
    "apt-get": _u("none", reads="-c --config-file"), "apt": _u("none", reads="-c"),
    "brew": _u("none", reads="--file"), "systemctl": _u("none"),
    "dig": _u("none", reads="-f -k"),
    "npx": _u("none"), "ping": _u("none"), "ssh": _u("none", reads="-F -i"),
    "patch": _u("none"),  # its files are the patch's: patches.py
    "journalctl": _u("none", reads="--file -D --directory --root --cursor-file"),
    "sudo": _u("none"), "timeout": _u("none"), "nice": _u("none"), "nohup": _u("none"),
    "tmux": _u("none", reads="-f", writes="-S", values="-L -T"), "watch": _u("none"),
    "chroot": _u("none"),
    "flock": _u("none", values="-w --timeout -E --conflict-exit-code"),
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
    "ss": _u("none", reads="-F --filter"), "netstat": _u("none"), "ifconfig": _u("none"),
    "ip": _u("none", reads="-b -batch"),
    "cpio": _u("none", reads="-F --file -E --pattern-file -I", writes="-O",
               values="-H --format -D --directory -R --owner -C --io-size -M --message"),
    "whereis": _u("none"), "whatis": _u("none"), "apropos": _u("none"), "tldr": _u("none"),
    "info": _u("none", reads="-f --file"), "fg": _u("none"), "bg": _u("none"), "disown": _u("none"),
}

FILE_USES.update({
    # python -m MODULE: the standard library's file tools, by what they do to their operands
    **{f"python -m {m}": _u("read") for m in (
        "py_compile", "compileall", "tokenize", "dis", "ast", "tabnanny", "pyclbr", "pydoc",
        "pickletools", "filecmp", "mimetypes", "sysconfig", "site", "platform")},
    "python -m json.tool": _u("in-out", values="--indent"),
    "python -m base64": _u("read"),
})

GIT_PATH_SUBCOMMANDS: dict[str, Mode] = {
    "add": "read", "rm": "write", "mv": "write", "checkout": "write", "restore": "write",
    "show": "read", "blame": "read", "cat-file": "read", "log": "read", "diff": "read",
    "apply": "read", "am": "read", "hash-object": "read", "stash": "read",
    "update-index": "read", "grep": "read", "archive": "read",
}
"""git subcommands whose operands (after `--`, or `rev:path`) are files, and how."""
