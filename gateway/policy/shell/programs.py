"""Programs that run code given in their arguments, options or environment, as data.

`CODE_OPTIONS` names, per program, the options whose value is a command line (analysed as
shell) or code in another language (unparseable); `CODE_ENV` the environment variables that
make programs run something else; `INERT` the programs known to run nothing named in their
arguments. A program in none of these tables is *opaque*: the evaluator looks through its
arguments for a denied command (an unknown wrapper) and treats one as unparseable.
"""

from __future__ import annotations

from typing import Literal

CodeKind = Literal["shell", "opaque"]
"""shell: the value is a command line, scanned as bash; opaque: code that is not analysed."""

CODE_OPTIONS: dict[str, dict[str, CodeKind]] = {
    "sort": {"--compress-program": "shell"},
    "tar": {"--to-command": "shell", "--checkpoint-action": "shell", "-I": "shell",
            "--use-compress-program": "shell", "--info-script": "shell", "-F": "shell",
            "--new-volume-script": "shell", "--rsh-command": "shell"},
    "rsync": {"-e": "shell", "--rsh": "shell", "--rsync-path": "shell"},
    "scp": {"-S": "shell", "-o": "shell", "-F": "opaque"},
    "sftp": {"-S": "shell", "-o": "shell", "-F": "opaque"},
    "ssh": {"-o": "shell", "-F": "opaque"},
    "man": {"-P": "shell", "--pager": "shell", "-H": "shell", "--html": "shell"},
    "less": {"+": "shell"},
    "zip": {"-TT": "shell", "--unzip-command": "shell"},
    # netcat -e/-c: a program whose stdin and stdout are a socket (a remote shell)
    "nc": {"-e": "opaque", "-c": "opaque", "--exec": "opaque", "--sh-exec": "opaque",
           "--lua-exec": "opaque"},
    "ncat": {"-e": "opaque", "-c": "opaque", "--exec": "opaque", "--sh-exec": "opaque",
             "--lua-exec": "opaque"},
    "netcat": {"-e": "opaque", "-c": "opaque"},
    "wget": {"--use-askpass": "shell"},
    "curl": {"-K": "opaque", "--config": "opaque"},
    "rg": {"--pre": "shell"},
    "make": {"--eval": "opaque", "-E": "opaque"},
    "gmake": {"--eval": "opaque", "-E": "opaque"},
    "vim": {"-c": "opaque", "--cmd": "opaque", "-S": "opaque", "-s": "opaque", "+": "opaque"},
    "vi": {"-c": "opaque", "--cmd": "opaque", "-S": "opaque", "-s": "opaque", "+": "opaque"},
    "nvim": {"-c": "opaque", "--cmd": "opaque", "-S": "opaque", "-s": "opaque", "+": "opaque",
             "-l": "opaque"},
    "view": {"-c": "opaque", "--cmd": "opaque", "-S": "opaque", "+": "opaque"},
    "vimdiff": {"-c": "opaque", "--cmd": "opaque", "-S": "opaque", "+": "opaque"},
    "ex": {"-c": "opaque", "--cmd": "opaque", "-S": "opaque", "-s": "opaque", "+": "opaque"},
    "emacs": {"--eval": "opaque", "-l": "opaque", "--load": "opaque", "-f": "opaque",
              "--funcall": "opaque", "--script": "opaque", "-x": "opaque"},
    "gdb": {"-ex": "opaque", "-x": "opaque", "--command": "opaque", "-iex": "opaque",
            "-ix": "opaque", "--eval-command": "opaque", "--init-eval-command": "opaque",
            "--init-command": "opaque"},
    "lldb": {"-o": "opaque", "--one-line": "opaque", "-s": "opaque", "--source": "opaque",
             "-O": "opaque", "-k": "opaque"},
    "sqlite3": {"-cmd": "opaque", "-init": "opaque"},
    "psql": {"-c": "opaque", "--command": "opaque", "-f": "opaque", "--file": "opaque"},
    "mysql": {"-e": "opaque", "--execute": "opaque", "--init-command": "opaque"},
    "apt-get": {"-o": "shell", "--option": "shell", "-c": "opaque", "--config-file": "opaque"},
    "apt": {"-o": "shell", "--option": "shell", "-c": "opaque", "--config-file": "opaque"},
    "dpkg": {"--pre-invoke": "shell", "--post-invoke": "shell"},
    "git": {},  # its own analyser: gitcmd.py
    "openssl": {"-engine": "opaque"},
    "journalctl": {},
    "systemctl": {},
    "docker": {"--entrypoint": "shell"},
    "bash": {},
    "node": {},
    "php": {},
    "xdg-open": {},
    # pip config edit --editor CMD; gcc -wrapper PROG,ARGS runs each compiler pass under PROG
    "pip": {"--editor": "shell"},
    "pip3": {"--editor": "shell"},
    **{cc: {"-wrapper": "opaque"} for cc in ("gcc", "g++", "cc", "c++", "gfortran", "gccgo")},
}
"""Program -> option -> what its value is. `+` stands for `+VALUE` words (less +!cmd)."""

SSH_COMMAND_OPTIONS = frozenset({"proxycommand", "localcommand", "knownhostscommand",
                                 "remotecommand", "permitlocalcommand", "match"})
"""ssh -o keys whose value runs a command (the value is scanned; Match exec is opaque)."""
APT_COMMAND_KEYS = ("pre-invoke", "post-invoke", "pre-install-pkgs", "post-invoke-success")
"""apt -o keys (APT::Update::Pre-Invoke::=cmd, DPkg::Post-Invoke::=cmd) that run commands."""

EnvKind = Literal["shell", "file", "opaque", "loader"]

CODE_ENV: dict[str, EnvKind] = {
    # prompts and hooks bash evaluates
    "PROMPT_COMMAND": "shell", "PS0": "shell", "PS1": "shell", "PS2": "shell", "PS3": "shell",
    "PS4": "shell", "BASH_ENV": "file", "ENV": "file", "SHELLOPTS": "loader",
    "BASHOPTS": "loader", "BASH_LOADABLES_PATH": "loader", "EXECIGNORE": "loader",
    # pagers, editors and helpers other programs run
    "PAGER": "shell", "GIT_PAGER": "shell", "MANPAGER": "shell", "SYSTEMD_PAGER": "shell",
    "EDITOR": "shell", "VISUAL": "shell", "GIT_EDITOR": "shell", "SUDO_EDITOR": "shell",
    "GIT_SEQUENCE_EDITOR": "shell", "FCEDIT": "shell", "BROWSER": "shell",
    "LESSOPEN": "shell", "LESSCLOSE": "shell", "MANOPT": "opaque", "LESS": "opaque",
    "GIT_SSH_COMMAND": "shell", "GIT_SSH": "shell", "GIT_EXTERNAL_DIFF": "shell",
    "GIT_ASKPASS": "shell", "SSH_ASKPASS": "shell", "SUDO_ASKPASS": "shell",
    "GIT_PROXY_COMMAND": "shell", "RSYNC_RSH": "shell", "RSYNC_CONNECT_PROG": "shell",
    "CVS_RSH": "shell", "TAR_OPTIONS": "opaque", "MAKEFLAGS": "loader", "MFLAGS": "loader",
    "MAKEFILES": "opaque", "GNUMAKEFLAGS": "loader",
    # configuration that brings its own commands
    "GIT_CONFIG_PARAMETERS": "opaque", "GIT_CONFIG_COUNT": "opaque",
    "GIT_CONFIG_GLOBAL": "opaque", "GIT_CONFIG_SYSTEM": "opaque", "GIT_CONFIG": "opaque",
    "GIT_EXEC_PATH": "opaque", "GIT_TEMPLATE_DIR": "loader", "GIT_DIR": "loader",
    # code loaded into whatever runs next
    "LD_PRELOAD": "opaque", "LD_AUDIT": "opaque", "LD_LIBRARY_PATH": "loader",
    "DYLD_INSERT_LIBRARIES": "opaque", "DYLD_LIBRARY_PATH": "loader",
    "PYTHONSTARTUP": "loader", "PYTHONPATH": "loader", "PYTHONHOME": "loader",
    "PYTHONINSPECT": "loader", "NODE_OPTIONS": "loader", "NODE_PATH": "loader",
    "PERL5OPT": "opaque", "PERL5LIB": "loader", "PERLLIB": "loader", "PERL5DB": "opaque",
    "RUBYOPT": "loader", "RUBYLIB": "loader", "LUA_INIT": "opaque", "LUA_PATH": "loader",
}
"""Environment variables whose value runs code: scanned (shell), sourced (file), not
analysable (opaque: the command is unparseable), or changing which files programs load
(loader: like running a file the agent wrote; such a command is never allowed by a rule).
GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n are matched by prefix."""
CODE_ENV_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "BASH_FUNC_")
PROGRAM_DIR_SUFFIXES = ("_BIN_PATH", "BINPATH", "_BIN_DIR", "_BINDIR", "_EXEC_PATH",
                        "_LIBEXEC_DIR")
"""A variable named so names directories a program runs programs from (`GROFF_BIN_PATH=.
nroff` runs a planted ./groff): what runs there is not analysed."""
PROGRAM_SUFFIXES = ("_COMMAND", "_CMD", "_PROGRAM", "_PROG", "EDITOR", "PAGER", "OPEN",
                    "_SHELL", "_HOOK", "_WRAPPER", "ASKPASS", "_LAUNCHER")
"""A variable named so names a program (a command line) some program runs: analysed as one."""


def env_kind(name: str) -> EnvKind | None:
    """What a variable set for a command does to it, by the tables and then by its name:
    a variable no table lists is harmless only when its name does not say it names code."""
    kind = CODE_ENV.get(name)
    if kind is not None:
        return kind
    if name.startswith(CODE_ENV_PREFIXES) or name.endswith(PROGRAM_DIR_SUFFIXES):
        return "opaque"
    if name.endswith(PROGRAM_SUFFIXES):
        return "shell"
    return None
"""BASH_FUNC_name%% exports a function into the next bash: its body is code."""

INERT = frozenset(
    [
        ":", "[", "[[", "true", "false", "test", "echo", "printf", "pwd", "cd", "pushd", "popd",
        "dirs", "type", "which", "whereis", "whatis", "apropos", "help", "info", "man", "tldr",
        "hash", "jobs", "wait", "exit", "return", "break", "continue", "shift", "getopts", "umask",
        "ulimit", "times", "history", "alias", "unalias", "set", "shopt", "unset", "export",
        "local", "readonly", "declare", "typeset", "read", "mapfile", "readarray", "logout",
        "suspend", "disown", "kill", "bg", "fg", "cat", "tac", "head", "tail", "more", "ls", "dir",
        "vdir", "tree", "stat", "file", "wc", "du", "df", "sync", "sleep", "date", "cal", "uptime",
        "uname", "hostname", "hostnamectl", "whoami", "id", "groups", "users", "who", "w", "last",
        "lastlog", "logname", "tty", "stty", "basename", "dirname", "realpath", "readlink",
        "pathchk", "mktemp", "mkdir", "rmdir", "touch", "cp", "mv", "ln", "rm", "unlink", "chmod",
        "chown", "chgrp", "install", "truncate", "shred", "dd", "mkfifo", "mknod", "link", "cut",
        "paste", "join", "comm", "sort", "uniq", "tr", "fold", "fmt", "nl", "pr", "expand",
        "unexpand", "column", "colrm", "rev", "shuf", "split", "csplit", "grep", "egrep", "fgrep",
        "rgrep", "zgrep", "zcat", "zless", "bzcat", "xzcat", "zstdcat", "diff", "diff3", "sdiff",
        "cmp", "patch", "od", "hexdump", "xxd", "strings", "base64", "base32", "basenc", "md5sum",
        "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum",
        "tee", "yes", "seq", "expr", "factor", "numfmt", "printenv", "iconv", "locale", "nproc",
        "getconf", "arch", "free", "ps", "pstree", "pgrep", "pkill", "pidof", "killall", "top",
        "htop", "vmstat", "iostat", "lsof", "lsblk", "lscpu", "lsusb", "lspci", "dmesg", "fuser",
        "jq", "yq", "xq", "gron", "ag", "ack", "sd", "diffstat", "wdiff", "gzip", "gunzip", "bzip2",
        "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "unzip", "7z", "7za", "lzma", "brotli",
        "curl", "http", "https", "wget", "ping", "dig", "nslookup", "host", "traceroute", "ip",
        "ss", "netstat", "ifconfig", "openssl", "ssh-keygen", "ssh-add", "gpg", "base64", "uuidgen",
        "cmake", "ninja", "npm", "pnpm", "yarn", "bun", "pip", "pip3", "pipx", "uv", "poetry",
        "pdm", "hatch", "conda", "cargo", "rustc", "rustup", "go", "gofmt", "gem", "bundle",
        "composer", "mvn", "gradle", "dotnet", "javac", "java", "apt-cache", "dnf", "yum", "pacman",
        "brew", "snap", "flatpak", "docker", "podman", "kubectl", "helm", "terraform", "kubens",
        "kubectx", "systemctl", "journalctl", "service", "pytest", "mypy", "ruff", "black", "isort",
        "flake8", "pylint", "tox", "nox", "coverage", "eslint", "prettier", "tsc", "jest", "vitest",
        "mocha"
    ]
)
"""Programs that run nothing named in their arguments (their code options, if any, are in
CODE_OPTIONS and their subcommands that wrap in wrappers.SUB_WRAPPERS). Build tools and test
runners run project files (Makefile, package.json scripts, conftest.py): that code is not in
the command; README lists it as a limitation."""


WRITE_NOTHING = frozenset({
    ":", "true", "false", "test", "[", "[[", "echo", "printf", "pwd", "cd", "pushd", "popd",
    "dirs", "type", "which", "command", "hash", "help", "ls", "cat", "head", "tail", "wc",
    "grep", "stat", "file", "basename", "dirname", "realpath", "readlink", "date", "uname",
    "whoami", "id", "env", "printenv", "set", "shopt", "export", "unset", "local", "declare",
    "typeset", "readonly", "exit", "return", "sleep",
})
"""Commands that create no file themselves (a redirection of theirs is a write, seen as such):
a script that does not exist before them does not exist after them."""


BASH_BUILTINS = frozenset((
    ".", ":", "[", "[[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command",
    "compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable",
    "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history",
    "jobs", "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test",
    "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait",
    "time", "coproc",
))
"""What bash runs itself, whatever PATH holds."""
SYSTEM_BIN_DIRS = frozenset({"/usr/bin", "/bin", "/usr/sbin", "/sbin"})
BUILDS_BINARIES = frozenset({
    "cc", "gcc", "g++", "c++", "clang", "clang++", "ld", "lld", "ld.lld", "gold", "tcc",
    "rustc", "go", "gccgo", "javac", "zig", "gfortran", "nasm", "as", "swiftc", "ghc", "nim",
    "dmd", "ldc2", "ocamlopt", "cargo", "make", "cmake", "ninja", "strip", "objcopy",
})
"""Programs whose output file is a built binary, not a script (`cc -o app && ./app`)."""
_NODE_PROJECT = ("package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs")
_PYTHON_PROJECT = ("setup.py", "pyproject.toml", "setup.cfg", "conftest.py", "pytest.ini",
                   "tox.ini", "noxfile.py", "sitecustomize.py", "usercustomize.py")
_MAKEFILES = ("Makefile", "makefile", "GNUmakefile")
PROJECT_CODE: dict[str, tuple[str, ...]] = {
    **{name: _NODE_PROJECT for name in ("npm", "pnpm", "yarn", "bun", "npx", "corepack")},
    **{name: _PYTHON_PROJECT for name in ("pip", "pip3", "uv", "pytest", "py.test", "tox",
                                          "nox", "poetry", "pdm", "hatch", "python", "python3")},
    **{name: _MAKEFILES for name in ("make", "gmake")},
    "cargo": ("build.rs", "Cargo.toml", ".cargo/config.toml", ".cargo/config"),
    "cmake": ("CMakeLists.txt",), "go": ("go.mod",), "mvn": ("pom.xml",),
    "gradle": ("build.gradle", "build.gradle.kts", "settings.gradle"),
    "rake": ("Rakefile",), "bundle": ("Gemfile",), "composer": ("composer.json",),
    "just": ("justfile", "Justfile", ".justfile"), "task": ("Taskfile.yml",),
}
"""Runners and the project files whose code they run (lifecycle scripts, recipes, build
scripts, plugins): written and run in one command, that code is the agent's and unread."""
WRITE_NO_CODE = frozenset({"chmod", "chown", "chgrp", "touch", "rm", "unlink", "rmdir",
                           "mkdir", "truncate", "setfacl"})
"""Writes that change a file's mode, owner or existence, or leave it empty: no code in it."""


def venv_created(name: str, args: list[str]) -> str | None:
    """The directory a virtual environment is created in by `python -m venv DIR`,
    `virtualenv DIR` or `uv venv [DIR]` (None for anything else)."""
    operands = [a for a in args if not a.startswith("-")]
    if name.startswith(("python", "pypy")) and args[:2] == ["-m", "venv"]:
        rest = [a for a in args[2:] if not a.startswith("-")]
        return rest[-1] if rest else None
    if name == "virtualenv" and operands:
        return operands[-1]
    if name == "uv" and operands[:1] == ["venv"]:
        return operands[1] if len(operands) > 1 else ".venv"
    return None
