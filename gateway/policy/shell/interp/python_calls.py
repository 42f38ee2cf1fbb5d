"""The calls that start programs or touch files, turned into commands, scripts, reads, writes."""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass, field

from gateway.policy.shell.interp import python_tables as t
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.programs import language_of, program_name
from gateway.policy.shell.interp.python_names import Program
from gateway.policy.shell.interp.python_values import (
    UNKNOWN,
    Evaluator,
    Value,
    concat,
    join,
    static,
    to_bash,
    to_word,
)
from gateway.policy.shell.interp.settle import settle, uncertain
from gateway.policy.shell.words import Word

_PATH_KEYWORDS = (("path", "src", "name", "filename", "file", "source", "base_name"),
                  ("dst", "dest", "target", "extract_dir", "destination"))
_WRITE_MODE = frozenset("wax+")
_WRITE_FLAGS = frozenset({"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND", "O_TMPFILE"})


@dataclass
class Options:
    """How a process is started: what it reads on stdin, its environment, its directory."""

    stdin: Value | None = None
    """None: it inherits the interpreter's stdin; else the text the code feeds it."""
    env: list[tuple[str, Value]] = field(default_factory=list)
    cwd: Value | None = None


class Calls:
    def __init__(self, program: Program, cap: int) -> None:
        self.p = program
        self.values = Evaluator(program, cap)
        self.budget = 4 * cap
        self.commands: list[tuple[Word, ...]] = []
        self.scripts: list[str] = []
        self.reads: list[Word] = []
        self.writes: list[Word] = []
        self.problem = ""
        self.env: list[tuple[str, Value]] = []
        self.env_problem = ""
        self.chdir = False
        self.plumbing = ""

    def fail(self, why: str) -> None:
        if not self.problem:
            self.problem = why

    # -- emitting --------------------------------------------------------------------------
    def _charge(self, size: int) -> bool:
        self.budget -= size
        if self.budget < 0:
            self.fail("the code builds more command text than this analysis follows")
        return self.budget >= 0

    def command(self, argv: list[Value], what: str, options: Options | None = None) -> None:
        if not argv:
            return
        options = options or Options()
        if static(argv[0]) is None or not static(argv[0]):
            self.fail(f"{what} runs a program named at run time")
        if options.env:
            argv = [("env",), *(concat((f"{k}=",), v) for k, v in options.env), *argv]
        if options.stdin is not None:
            self._fed(argv, options, what)
            return
        words = [to_word(v) for v in argv]
        if not self._charge(sum(len(w.text) for w in words)):
            return
        if options.cwd is not None:
            words = [words[0], *(uncertain(w) for w in words[1:])]
        self.commands.append(tuple(words))

    def _fed(self, argv: list[Value], options: Options, what: str) -> None:
        """A process the code writes to: a here-string in Bash says the same."""
        stdin = options.stdin or ()
        names = [program_name(text) for text in map(static, argv) if text]
        readers = [n for n in names if n in t.SHELLS or language_of(n) is not None]
        if readers and static(stdin) is None:  # also through wrappers: sudo sh, env bash
            self.fail(f"{what} feeds text computed at run time to {readers[0]}")
        text = " ".join(to_bash(v) for v in argv) + " <<< " + to_bash(stdin)
        self.script((text,), what, Options(cwd=options.cwd))

    def script(self, value: Value, what: str, options: Options | None = None) -> None:
        text = static(value)
        if text is None:
            self.fail(f"{what} runs a shell string computed at run time")
            return
        options = options or Options()
        if options.stdin is not None:
            if static(options.stdin) is None:
                self.fail(f"{what} writes text computed at run time to a shell command")
            text = "{ " + text + "\n} <<< " + to_bash(options.stdin)
        if options.cwd is not None:
            text = f"cd -- {to_bash(options.cwd)} && {{ {text}\n}}"
        if options.env:
            assigns = " ".join(to_bash(concat((f"{k}=",), v)) for k, v in options.env)
            text = f"env {assigns} sh -c {shlex.quote(text)}"
        if self._charge(len(text)):
            self.scripts.append(text)

    def file_command(self, words: tuple[str, ...], paths: list[Value]) -> None:
        if words:
            self.command([*((w,) for w in words), ("--",), *paths], words[0])

    def read(self, value: Value) -> None:
        if self._charge(len(value)):
            self.reads.append(to_word(value))

    def write(self, value: Value) -> None:
        if self._charge(len(value)):
            self.writes.append(to_word(value))

    # -- dispatch ----------------------------------------------------------------------------
    def qualified(self, name: str, node: ast.Call) -> None:
        last = name.rpartition(".")[2]
        if name in t.SHELL_CALLS:
            self.shell(name, node)
        elif name in t.SUBPROCESS_CALLS:
            self.subprocess(name, node)
        elif name in t.EXEC_CALLS:
            self.exec(name, node, t.EXEC_CALLS[name])
        elif name == "pty.spawn":
            self.pty_spawn(node)
        elif name in t.FILE_CALLS:
            self.file_op(node, t.FILE_CALLS[name])
        elif name in t.CHMOD_CALLS:
            mode = node.args[1] if len(node.args) > 1 else _keyword(node, "mode")
            self.chmod(self.arg(node, 0, _PATH_KEYWORDS[0]), mode)
        elif name in t.OPEN_CALLS:
            self.opener(node, t.OPEN_CALLS[name])
        elif name == "os.open":
            self.os_open(node)
        elif name in t.NETWORK_CALLS:
            self.network(name, node)
        elif name in t.CHDIR_CALLS:
            self.chdir = True
        elif name in t.PUTENV_CALLS and len(node.args) == 2:
            self.setenv(node.args[0], node.args[1])
        elif name in t.DESCRIPTOR_CALLS:
            self.plumbing = name
        elif name.startswith(("os.environ.", "os.environb.")):
            self.environ_method(last, node)
        elif name.startswith("tempfile.") and _keyword(node, "dir") is not None:
            self.write(concat(self.values.value(_keyword(node, "dir") or ast.Constant("")),
                              ("/",), UNKNOWN))
        elif name == "shutil.make_archive":
            self.write(concat(self.arg(node, 0, ("base_name",)), UNKNOWN))
        elif name.rpartition(".")[0] in t.PATH_TYPES and last in t.PATH_METHODS and node.args:
            self.method(last, node.args[0], ast.Call(node.func, node.args[1:], node.keywords))
        elif last in t.PROCESS_NAMES and name not in t.NOT_PROCESSES:
            self.fail(f"{name} starts programs in a way this analysis does not model")

    def arg(self, node: ast.Call, index: int, keywords: tuple[str, ...]) -> Value:
        if len(node.args) > index:
            return self.values.value(node.args[index])
        for key in keywords:
            found = _keyword(node, key)
            if found is not None:
                return self.values.value(found)
        return UNKNOWN

    def chmod(self, path: Value, mode: ast.expr | None) -> None:
        known = type(mode) is ast.Constant and isinstance(mode.value, int)
        digits: Value = (format(mode.value, "o"),) if known else UNKNOWN  # type: ignore[union-attr]
        self.command([("chmod",), digits, ("--",), path], "chmod")
        self.write(path)

    # -- processes ---------------------------------------------------------------------------
    def options(self, name: str, node: ast.Call) -> Options | None:
        stdin: Value | None = None
        feed = _keyword(node, "input")
        source = _keyword(node, "stdin")
        if feed is not None:
            stdin = self.values.value(feed)
        elif source is not None and not self._inherits(source):
            stdin = UNKNOWN
        env = _keyword(node, "env")
        items = self.env_items(env, node) if env is not None else []
        if items is None:
            self.fail(f"{name} gets an environment computed at run time")
            return None
        cwd = _keyword(node, "cwd")
        return Options(stdin, items, None if cwd is None else self.values.value(cwd))

    def _inherits(self, node: ast.expr) -> bool:
        if type(node) is ast.Constant and node.value in (None, -3):
            return True
        return self.p.qualify(node) in t.INHERITED_STDIN if isinstance(
            node, ast.Name | ast.Attribute) else False

    def shell(self, name: str, node: ast.Call) -> None:
        if not node.args and _keyword(node, "cmd") is None:
            return
        options = self.options(name, node)
        if options is None:
            return
        mode = node.args[1] if len(node.args) > 1 else _keyword(node, "mode")
        if mode is not None and name.endswith("popen"):
            text = static(self.values.value(mode))
            if text is None or "w" in text:
                options.stdin = UNKNOWN
        self.script(self.arg(node, 0, ("cmd", "command")), name, options)

    def subprocess(self, name: str, node: ast.Call) -> None:
        if any(type(a) is ast.Starred for a in node.args) or any(
                k.arg is None for k in node.keywords):
            self.fail(f"{name} with arguments unpacked at run time")
            return
        if len(node.args) > 1:
            self.fail(f"{name} with options given by position")
            return
        args = node.args[0] if node.args else _keyword(node, "args")
        if args is None:
            return
        shell = _keyword(node, "shell")
        if shell is not None and type(shell) is not ast.Constant:
            self.fail(f"{name} with shell= computed at run time")
            return
        options = self.options(name, node)
        if options is None:
            return
        executable = _keyword(node, "executable")
        if shell is not None and shell.value:
            exe = static(self.values.value(executable)) if executable is not None else "sh"
            if exe is None or program_name(exe) not in t.SHELLS:
                shown = exe or "a program named at run time"
                self.fail(f"{name} runs its shell string with {shown}")
                return
            literal = self.values.literal(args, node)
            if isinstance(literal, ast.List | ast.Tuple):
                if literal.elts:
                    self.script(self.values.value(literal.elts[0]), name, options)
                return
            self.script(self.values.value(args), name, options)
            return
        argv = self.values.argv(args, node)
        if argv is None:
            text = self.values.value(args)
            if text == UNKNOWN:
                self.fail(f"{name} runs a command computed at run time")
            else:  # a string: the program's name on POSIX; read as a shell string, a superset
                self.script(text, name, options)
            return
        if executable is not None and argv:
            argv[0] = self.values.value(executable)
        self.command(argv, name, options)

    def exec(self, name: str, node: ast.Call, spec: t.Exec) -> None:
        args = node.args
        if any(type(a) is ast.Starred for a in args[: spec.argv + 1]) or len(args) <= spec.program:
            self.fail(f"{name} with arguments unpacked at run time")
            return
        program = self.values.value(args[spec.program])
        if spec.listed:
            argv = self.values.argv(args[spec.argv], node) if len(args) > spec.argv else []
            rest = UNKNOWN_ARGV if argv is None else argv[1:] if spec.skip_arg0 else argv
        else:
            end = len(args) - 1 if spec.env_last else len(args)
            values = [UNKNOWN if type(a) is ast.Starred else self.values.value(a)
                      for a in args[spec.argv:end]]
            rest = values[1:] if spec.skip_arg0 else values
        env_node = args[-1] if spec.env_last else (
            args[spec.env_at] if spec.env_at is not None and len(args) > spec.env_at
            else _keyword(node, "env"))
        options = self.options(name, node) or Options()
        if env_node is not None:
            items = self.env_items(env_node, node)
            if items is None:
                self.fail(f"{name} gets an environment computed at run time")
                return
            options.env = items
        if _keyword(node, "file_actions") is not None:
            options.stdin = UNKNOWN
        self.command([program, *rest], name, options)

    def pty_spawn(self, node: ast.Call) -> None:
        if not node.args:
            return
        argv = self.values.argv(node.args[0], node)
        if argv is None:
            argv = [self.values.value(node.args[0])]
        feeds = len(node.args) > 2 or _keyword(node, "stdin_read") is not None
        self.command(argv, "pty.spawn", Options(stdin=UNKNOWN if feeds else None))

    # -- environment -------------------------------------------------------------------------
    def env_items(self, node: ast.expr, call: ast.Call) -> list[tuple[str, Value]] | None:
        """Variables set by an env= mapping (inherited ones left out); None when unknown."""
        if type(node) is ast.Constant and node.value is None:
            return []
        if self._environ(node):
            return []
        if type(node) is ast.Call and self.p.qualify(node.func) == "builtins.dict":
            if len(node.args) > 1 or (node.args and not self._environ(node.args[0])):
                return None
            return self._keywords(node)
        node = self.values.literal(node, call)
        if type(node) is not ast.Dict:
            return None
        items: list[tuple[str, Value]] = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                if not self._environ(value):
                    return None
                continue
            name = static(self.values.value(key))
            if name is None:
                return None
            items.append((name, self.values.value(value)))
        return items

    def _keywords(self, node: ast.Call) -> list[tuple[str, Value]] | None:
        items: list[tuple[str, Value]] = []
        for keyword in node.keywords:
            if keyword.arg is None:
                if not self._environ(keyword.value):
                    return None
                continue
            items.append((keyword.arg, self.values.value(keyword.value)))
        return items

    def _environ(self, node: ast.expr) -> bool:
        """os.environ or a copy of it."""
        if type(node) is ast.Call and not node.args and not node.keywords:
            node = node.func
            return isinstance(node, ast.Attribute) and node.attr == "copy" and self._environ(
                node.value)
        return isinstance(node, ast.Name | ast.Attribute) and self.p.qualify(node) in t.ENVIRON

    def setenv(self, key: ast.expr, value: ast.expr | None) -> None:
        name = static(self.values.value(key))
        if name is None:
            self.env_problem = self.env_problem or "sets an environment variable named at run time"
            return
        self.env.append((name, UNKNOWN if value is None else self.values.value(value)))

    def environ_method(self, method: str, node: ast.Call) -> None:
        if method not in t.ENVIRON_METHODS:
            self.fail(f"calls os.environ.{method}")
        elif method == "setdefault" and node.args:
            self.setenv(node.args[0], node.args[1] if len(node.args) > 1 else None)
        elif method == "update":
            items: list[tuple[str, Value]] | None = self._keywords(node)
            for arg in node.args:
                more = self.env_items(arg, node)
                items = None if more is None or items is None else [*items, *more]
            if items is None:
                self.env_problem = self.env_problem or "changes the environment at run time"
            else:
                self.env.extend(items)

    def environment_stores(self) -> None:
        for target, value in self.p.env_stores:
            base = target.value
            if isinstance(base, ast.Name | ast.Attribute) and self.p.qualify(base) in t.ENVIRON:
                self.setenv(target.slice, value)

    # -- files -------------------------------------------------------------------------------
    def file_op(self, node: ast.Call, spec: t.FileOp) -> None:
        relative_to_fd = any(k.arg and k.arg.endswith("dir_fd") for k in node.keywords)
        paths: list[Value] = []
        for position, index in enumerate(spec.paths):
            value = self.arg(node, index, _PATH_KEYWORDS[min(position, 1)])
            if value == UNKNOWN and len(node.args) <= index and spec.default_last is not None:
                value = (spec.default_last,)
            paths.append(_relative_unknown(value) if relative_to_fd else value)
        self.file_command(spec.command, paths)
        for index in spec.reads:
            self.read(paths[spec.paths.index(index)])
        for index in spec.writes:
            self.write(paths[spec.paths.index(index)])

    def opener(self, node: ast.Call, spec: t.Opener) -> None:
        target = node.args[spec.path] if len(node.args) > spec.path else _keyword(
            node, spec.path_kw)
        if target is None or (type(target) is ast.Constant and isinstance(target.value, int)):
            return  # a file descriptor, or no file
        mode_node = None if spec.mode is None else (
            node.args[spec.mode] if len(node.args) > spec.mode else _keyword(node, spec.mode_kw))
        mode = spec.default if mode_node is None else static(self.values.value(mode_node))
        if _keyword(node, "inplace") is not None:
            mode = "rw"
        targets = target.elts if isinstance(target, ast.List | ast.Tuple) else [target]
        for item in targets:
            self.opened(self.values.value(item), mode)

    def opened(self, path: Value, mode: str | None) -> None:
        if path == (":memory:",):
            return
        if mode is None or "r" in mode or "+" in mode or not set(mode) & _WRITE_MODE:
            self.read(path)
        if mode is None or set(mode) & _WRITE_MODE or mode in ("c", "n"):
            self.write(path)

    def os_open(self, node: ast.Call) -> None:
        if not node.args:
            return
        path = self.values.value(node.args[0])
        flags = node.args[1] if len(node.args) > 1 else _keyword(node, "flags")
        self.opened(path, None if flags is None else _flags_mode(flags))

    def method(self, name: str, receiver: ast.expr, node: ast.Call) -> None:
        """A method on an object this analysis may not know: path methods act on files."""
        if name in t.PROCESS_NAMES:
            self.fail(f"calls .{name}() on an object this analysis cannot identify")
            return
        if name == "open":
            mode = node.args[0] if node.args else _keyword(node, "mode")
            text = "r" if mode is None else static(self.values.value(mode))
            self.opened(self.values.value(receiver), text)
            return
        spec = t.PATH_METHODS.get(name)
        if spec is None:
            return
        keywords_matter = name in ("rename", "replace") and node.keywords
        if spec.target and (len(node.args) != 1 or keywords_matter):
            return  # str.replace(a, b), dict.copy(), DataFrame.rename(columns=...)
        path = self.values.value(receiver)
        paths = [path]
        if spec.target:
            paths.append(self.values.value(node.args[0]))
        if name in ("chmod", "lchmod"):
            self.chmod(path, node.args[0] if node.args else _keyword(node, "mode"))
            return
        if name == "link_to":
            self.write(paths[1])
        self.file_command(spec.command, paths)
        if spec.read:
            self.read(path)
        if spec.write:
            for value in paths:
                self.write(value)

    def network(self, name: str, node: ast.Call) -> None:
        index = t.NETWORK_CALLS[name]
        url = UNKNOWN
        if index is not None and len(node.args) > index:
            target = node.args[index]
            if isinstance(target, ast.Tuple) and target.elts:
                target = target.elts[0]
            url = self.values.value(target)
        elif index is not None:
            found = _keyword(node, "url") or _keyword(node, "host") or _keyword(node, "address")
            url = self.values.value(found) if found is not None else UNKNOWN
        self.command([("curl",), url], name)
        if name.endswith("urlretrieve") and (len(node.args) > 1 or _keyword(node, "filename")):
            self.write(self.arg(node, 1, ("filename",)))

    # -- the result --------------------------------------------------------------------------
    def effects(self) -> CodeEffects:
        return settle(self, self.fail)


UNKNOWN_ARGV: list[Value] = [UNKNOWN]


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None




def _relative_unknown(value: Value) -> Value:
    first = value[0] if value else ""
    return value if first is not None and first.startswith("/") else concat(UNKNOWN, value)


def _flags_mode(node: ast.expr) -> str | None:
    """os.open flags: 'r' or 'w' when read from names and constants, else None (both)."""
    if type(node) is ast.Constant and isinstance(node.value, int):
        return "w" if node.value & 0o3103 else "r"
    names: list[str] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.BinOp) and isinstance(item.op, ast.BitOr):
            stack.extend((item.left, item.right))
        elif isinstance(item, ast.Attribute):
            names.append(item.attr)
        elif isinstance(item, ast.Name):
            names.append(item.id)
        else:
            return None
    return "w" if _WRITE_FLAGS & set(names) else "r"


__all__ = ["Calls", "Options", "join"]
