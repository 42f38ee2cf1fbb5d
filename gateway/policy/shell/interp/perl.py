"""Perl programs (`perl -e`, -M, -F), parsed with tree-sitter-perl.

Perl reaches processes through `system`, `exec`, backticks, `qx`, `readpipe` and `open` with a
pipe (or the two-argument open of a name that may end in one), files through builtins and a
few modules (File::Path, File::Copy, File::Slurp, POSIX), and code by name through string
eval, `do FILE`, `require EXPR`, symbolic references (`&{"name"}`, `$f->()` of a string,
`->$method`, `->can`), the symbol table (`*x = ...`, `%main::`), `%SIG` handlers named by
string, and code in regexes (`(?{ })`, `/ee`). A call with arguments this analysis can read
becomes a script, a command, a read or a write; the rest makes the program unparseable. The
replacement of `s///e` is code and is analysed as such. String literals and comments are
never actions.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from gateway.policy.shell.interp import collect as c
from gateway.policy.shell.interp import perl_tables as t
from gateway.policy.shell.interp.collect import Options
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.treewalk import TreeAnalysis, field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat, static

_CALLS = ("function_call_expression", "ambiguous_function_call_expression",
          "func0op_call_expression", "func1op_call_expression")
_READ_PARENTS = frozenset({
    "string_content", "equality_expression", "relational_expression", "conditional_expression",
    "postfix_conditional_expression", "return_expression", "array_element_expression",
    "hash_element_expression", "parenthesized_expression", "lowprec_logical_expression",
    "logical_expression", "heredoc_content", "unary_expression", "stringify_expression",
})
_ESCAPE = re.compile(r"\\(?:([ntrfbae0\\\"$@'])|x\{([0-9A-Fa-f]+)\}|x([0-9A-Fa-f]{0,2})|"
                     r"([0-7]{1,3})|N\{U\+([0-9A-Fa-f]+)\}|(.))", re.S)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "b": "\b", "a": "\a", "e": "\x1b",
           "0": "\0"}
_REGEX_CODE = re.compile(r"\(\?\??\{")
_WRITE_FLAGS = frozenset({"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"})
_MODES = re.compile(r"^\s*(\+?(?:<|>>|>)|\|-|-\||)\s*(&?=?)")


def analyse_perl(source: str) -> CodeEffects:
    return _Perl(source).analyse()


class _Perl(TreeAnalysis):
    language = "perl"

    def __init__(self, source: str, nested: int = 0) -> None:
        super().__init__(source)
        self.nested = nested
        self.diamond = False
        self.argv_changed = False
        self.binds = {"scalar": self.scalar, "readline_expression": self.readline}
        self.checks = {name: self.call for name in _CALLS}
        self.checks.update({
            "function": self.bare_function, "command_string": self.backticks,
            "eval_expression": self.eval, "require_expression": self.require,
            "use_statement": self.use, "method_call_expression": self.method,
            "coderef_call_expression": self.coderef_call, "refgen_expression": self.refgen,
            "assignment_expression": self.assignment, "glob": self.glob,
            "substitution_regexp": self.substitution, "match_regexp": self.regex,
            "quoted_regexp": self.regex, "sort_expression": self.sort,
            "hash": self.hash_variable, "container_variable": self.hash_variable,
            "goto_expression": self.goto, "array": self.array_variable,
        })

    # -- bindings ----------------------------------------------------------------------------
    def scalar(self, node: Node) -> None:
        """How often each scalar is bound: assigned, declared, looped over, or passed where it
        may be changed (`chomp($x)`, `s///` on it, any sub through @_)."""
        name = text(node)
        if name == "$_" or name.startswith("${"):
            return
        parent = self.parent(node)
        if parent is None:
            return
        kind = parent.type
        if kind == "variable_declaration":
            holder = self.parent(parent)
            if holder is not None and holder.type == "assignment_expression" and _is_plain(
                    holder) and field(holder, "left") == parent and (
                    field(parent, "variable") == node):
                self.bound(name, field(holder, "right"))
            else:
                self.bound(name)
            return
        if kind == "assignment_expression" and field(parent, "left") == node:
            self.bound(name, field(parent, "right") if _is_plain(parent) else None)
            return
        if kind == "assignment_expression" or kind in _READ_PARENTS:
            return
        if kind == "binary_expression":
            operator = _operator(parent)
            right = field(parent, "right")
            if operator not in ("=~", "!~") or right is None or right.type not in (
                    "substitution_regexp", "transliteration_expression"):
                return
        if kind in ("list_expression", *_CALLS) and self.passed_by_value(parent):
            return
        self.bound(name)

    def passed_by_value(self, parent: Node) -> bool:
        call = self.parent(parent) if parent.type == "list_expression" else parent
        if call is None or call.type not in _CALLS:
            return False
        return _function_name(call) in t.BY_VALUE

    def readline(self, node: Node) -> None:
        inner = named_children(node)
        if not inner or (inner[0].type == "filehandle" and text(inner[0]) in ("ARGV", "STDIN")):
            self.diamond = self.diamond or not inner or text(inner[0]) == "ARGV"

    # -- calls -------------------------------------------------------------------------------
    def call(self, node: Node) -> None:
        name = _function_name(node)
        if name is None:
            self.dynamic_call(node)
            return
        self.named(node, name, self.arguments(node))

    def dynamic_call(self, node: Node) -> None:
        function = field(node, "function")
        if function is not None and function.named_child_count:
            self.fail("calls a sub through a reference or a name computed at run time")

    def bare_function(self, node: Node) -> None:
        """`unlink;` and `print for ...`: a builtin with no arguments works on $_."""
        parent = self.parent(node)
        if parent is None or parent.type in _CALLS or parent.type in (
                "refgen_expression", "goto_expression"):
            return
        if node.named_child_count:
            self.fail("calls a sub through a reference or a name computed at run time")
            return
        name = _bare(text(node))
        op = t.FUNCTIONS.get(name)
        if isinstance(op, c.FileOp):
            self.out.file_op(op, [UNKNOWN])
        elif op in ("spawn", "script"):
            self.out.script(UNKNOWN, name)

    def arguments(self, node: Node) -> list[Node]:
        args = field(node, "arguments")
        if args is None:
            inner = [ch for ch in named_children(node) if ch.type not in ("function",
                                                                            "indirect_object")]
            args = inner[0] if len(inner) == 1 else None
        if args is None:
            return []
        while args.type == "parenthesized_expression" and args.named_child_count == 1:
            args = args.named_children[0]
        if args.type == "list_expression":
            return named_children(args)
        return [args]

    def named(self, node: Node, name: str, args: list[Node]) -> None:
        if name.startswith("CORE::GLOBAL::"):
            self.fail("reaches CORE::GLOBAL")
            return
        package, _, short = name.rpartition("::")
        package = package.removeprefix("CORE").removeprefix("main")
        if package and _module_why(package):
            self.fail(f"calls {name}: it {_module_why(package)}")
            return
        op = t.FUNCTIONS.get(short)
        if op is None or op == "harmless":
            return
        what = short
        if isinstance(op, c.FileOp):
            self.file_op(op, args)
        elif op == "spawn":
            self.spawn(node, what, args)
        elif op == "script":
            self.out.script(self.value(args[0]) if args else UNKNOWN, what)
        elif op == "open":
            self.open(args)
        elif op == "sysopen":
            self.sysopen(args)
        elif op == "chdir":
            self.out.chdir = True
        elif op == "plumbing":
            self.out.plumbing = f"{what} changes its file descriptors"
        elif op == "require":
            self.require(node)
        elif op.startswith("fail:"):
            self.fail(f"{what}: it {op[5:]}")

    def list_values(self, args: list[Node]) -> list[Value]:
        values: list[Value] = []
        for arg in args:
            if arg.type == "quoted_word_list":
                values.extend((w,) for w in static(self.value_of_words(arg)) or [])
                continue
            if arg.type in ("array", "hash") or arg.type == "anonymous_array_expression":
                listed = self.listed(arg)
                values.extend(listed if listed is not None else [UNKNOWN])
                continue
            values.append(self.value(arg))
        return values

    def value_of_words(self, node: Node) -> Value:
        return (text(field(node, "content") or node),)

    def listed(self, node: Node) -> list[Value] | None:
        if node.type == "anonymous_array_expression":
            return self.list_values(self.arguments(node) or named_children(node))
        return None

    def file_op(self, op: c.FileOp, args: list[Node]) -> None:
        if op.paths == (-1,):
            values = self.list_values(args) if args else [UNKNOWN]
        elif op.paths[0] > 0:
            values = self.list_values(args[op.paths[0]:])
            for path in values:
                self.out.file_op(c.FileOp(op.command, (0,), op.reads, op.writes), [path])
            return
        else:
            values = self.list_values(args)
            if len(values) <= max(op.paths):
                values.extend([UNKNOWN] * (max(op.paths) + 1 - len(values)))
        self.out.file_op(op, values)

    def spawn(self, node: Node, what: str, args: list[Node]) -> None:
        indirect = next((ch for ch in node.named_children if ch.type == "indirect_object"), None)
        values = self.list_values(args)
        if indirect is not None:  # exec { PROGRAM } LIST: LIST[0] is only argv[0]
            inner = named_children(indirect)
            program = self.value(inner[0]) if inner else UNKNOWN
            if inner and inner[0].type == "block":
                statements = named_children(inner[0])
                program = self.value(statements[0].named_children[0]) if statements and (
                    statements[0].named_child_count == 1) else UNKNOWN
            self.out.command([program, *values[1:]], what)
        elif len(values) == 1 and len(args) == 1 and args[0].type not in (
                "array", "quoted_word_list", "anonymous_array_expression"):
            self.out.script(values[0], what)
        elif values:
            self.out.command(values, what)

    def open(self, args: list[Node]) -> None:
        if not args:
            return
        handle = args[0]
        if re.search(r"\bSTDIN\b", text(handle)):
            self.out.plumbing = "reopens its stdin"
        if len(args) == 1:
            self.fail("uses the one-argument open")
            return
        if len(args) == 2:
            spec = self.value(args[1])
            first = spec[0] if spec else ""
            whole = static(spec)
            if whole is None or first is None:
                self.fail("uses the two-argument open of a name computed at run time")
                return
            stripped = whole.strip()
            if stripped.startswith("|") or stripped.endswith("|"):
                self.out.script((stripped.strip("|"),), "open")
                return
            mode = _MODES.match(stripped)
            prefix = mode.group(1) if mode is not None else ""
            path = stripped[mode.end():].strip() if mode is not None else stripped
            if mode is not None and mode.group(2):
                return  # a duplicated handle (>&STDOUT)
            if path == "-":
                return
            self.out.opened((path,), _fopen(prefix))
            return
        mode_value = static(self.value(args[1]))
        if mode_value is None:
            self.fail("opens a file with a mode computed at run time")
            return
        mode_text = mode_value.strip()
        if mode_text in ("-|", "|-"):
            rest = self.list_values(args[2:])
            if len(rest) == 1:
                self.out.script(rest[0], "open", Options(
                    stdin=UNKNOWN if mode_text == "|-" else None))
            else:
                self.out.command(rest, "open", Options(
                    stdin=UNKNOWN if mode_text == "|-" else None))
            return
        prefix = _MODES.match(mode_text)
        if prefix is None or prefix.group(2):
            return  # dup of a handle: <&, >&=
        target = args[2]
        if target.type == "refgen_expression":
            return  # an in-memory file
        self.out.opened(self.value(target), _fopen(prefix.group(1)))

    def sysopen(self, args: list[Node]) -> None:
        if len(args) < 3:
            return
        flags = {m for m in re.findall(r"O_[A-Z]+", text(args[2]))}
        only_names = re.fullmatch(r"[\sO_A-Z|&:]+", text(args[2])) is not None
        mode = None if not only_names else ("w" if flags & _WRITE_FLAGS else "r")
        self.out.opened(self.value(args[1]), mode)

    # -- code by name ------------------------------------------------------------------------
    def backticks(self, node: Node) -> None:
        content = field(node, "content")
        self.out.script(self.interpolated(content, 0) if content is not None else ("",),
                        "backticks")

    def eval(self, node: Node) -> None:
        inner = named_children(node)
        if inner and inner[0].type == "block":
            return
        self.fail("runs a file (do FILE)" if inner and inner[0].type == "filename"
                  else "evaluates a string")

    def require(self, node: Node) -> None:
        inner = named_children(node)
        if not inner:
            return
        target = inner[0]
        if target.type in ("bareword", "package"):
            self.module(text(target))
        else:
            self.fail("loads a file named by a string or at run time")

    def use(self, node: Node) -> None:
        module = field(node, "module")
        if module is not None:
            self.module(text(module))

    def module(self, name: str) -> None:
        why = _module_why(name)
        if why:
            self.fail(f"uses {name}, which {why}")
        elif any(name == n or name.startswith(n + "::") for n in t.NETWORK_MODULES):
            self.out.network(UNKNOWN, name)

    def method(self, node: Node) -> None:
        method = field(node, "method")
        invocant = field(node, "invocant")
        if method is None:
            return
        if method.named_child_count or text(method).startswith("$"):
            self.fail("calls a method named at run time")
            return
        name = text(method)
        if name in ("can", "DOES") or name.endswith("::can"):
            self.fail(f"looks up a method by name with ->{name}")
            return
        if invocant is not None and invocant.type == "bareword":
            why = _module_why(text(invocant))
            if why:
                self.fail(f"calls {text(invocant)}->{name}: it {why}")
                return
        op = t.FUNCTIONS.get(name)
        if isinstance(op, c.FileOp):  # File::Path->rmtree(...) passes the class first
            self.file_op(op, self.arguments(node))
        elif op in ("spawn", "script", "open"):
            self.fail(f"calls ->{name}")

    def coderef_call(self, node: Node) -> None:
        inner = named_children(node)
        target = inner[0] if inner else None
        if target is None:
            return
        if target.type == "scalar":
            bound = self.assigned(text(target))
            if bound is not None and bound.type == "anonymous_subroutine_expression":
                return
        if target.type == "anonymous_subroutine_expression":
            return
        self.fail("calls a sub through a reference computed at run time")

    def refgen(self, node: Node) -> None:
        inner = named_children(node)
        if inner and inner[0].type == "function":
            name = _bare(text(inner[0]))
            if inner[0].named_child_count or name.startswith(("CORE::", "{")) or (
                    name.rpartition("::")[2] in t.FUNCTIONS):
                self.fail(f"takes a reference to {text(inner[0])}")

    def goto(self, node: Node) -> None:
        inner = named_children(node)
        if inner and inner[0].type in _CALLS and _function_name(inner[0]) is None:
            self.fail("jumps to a sub named at run time")

    def sort(self, node: Node) -> None:
        callback = field(node, "callback")
        if callback is not None and callback.type == "scalar":
            self.fail("sorts with a sub named at run time")

    def assignment(self, node: Node) -> None:
        left, right = field(node, "left"), field(node, "right")
        if left is None:
            return
        target = left.named_children[0] if left.type == "localization_expression" and (
            left.named_child_count) else left
        if target.type == "glob":
            self.fail("assigns to the symbol table")
        elif target.type == "scalar" and text(target) == "$^I":
            self.fail("edits the files <> reads in place ($^I)")
        elif target.type == "hash_element_expression":
            self.hash_assignment(target, right)
        elif target.type in ("array", "variable_declaration") and "@ARGV" in text(target):
            self.argv_changed = True
        elif target.type == "hash" and text(target) in ("%ENV", "%SIG"):
            self.out.env_changed("replaces %ENV") if text(target) == "%ENV" else self.fail(
                "replaces %SIG")

    def hash_assignment(self, target: Node, right: Node | None) -> None:
        hash_node = field(target, "hash")
        key = field(target, "key")
        name = text(hash_node).lstrip("$%@") if hash_node is not None else ""
        if name == "ENV":
            self.out.setenv(self.key(key), self.value(right) if right is not None else UNKNOWN)
        elif name == "SIG" and right is not None and right.type not in (
                "anonymous_subroutine_expression",) and static(self.value(right)) not in (
                t.SIGNAL_VALUES):
            self.fail("installs a signal handler named by a string")

    def key(self, node: Node | None) -> Value:
        if node is None:
            return UNKNOWN
        if node.type == "autoquoted_bareword":
            return (text(node),)
        return self.value(node)

    def glob(self, node: Node) -> None:
        if node.named_child_count and node.named_children[0].type != "varname":
            self.fail("reaches the symbol table")

    def hash_variable(self, node: Node) -> None:
        name = text(node)
        if name.endswith("::") or ("::" in name and name.lstrip("%$@").startswith("::")):
            self.fail("reaches the symbol table")

    def array_variable(self, node: Node) -> None:
        parent = self.parent(node)
        if text(node) == "@ARGV" and parent is not None and parent.type in _CALLS and (
                _function_name(parent) in ("push", "unshift", "splice")):
            self.argv_changed = True
        elif text(node) == "@ARGV" and parent is not None and parent.type == "list_expression":
            call = self.parent(parent)
            if call is not None and call.type in _CALLS and _function_name(call) in (
                    "push", "unshift", "splice") and named_children(parent)[0] == node:
                self.argv_changed = True

    def regex(self, node: Node) -> None:
        if _REGEX_CODE.search(text(node)):
            self.fail("runs code inside a regex")

    def substitution(self, node: Node) -> None:
        self.regex(node)
        modifiers = field(node, "modifiers")
        flags = text(modifiers) if modifiers is not None else ""
        if flags.count("e") > 1:
            self.fail("evaluates the result of a substitution (/ee)")
        elif "e" in flags:
            replacement = next((ch for ch in node.named_children if ch.type == "replacement"),
                               None)
            if replacement is not None:
                self.nested_code(text(replacement))

    def nested_code(self, source: str) -> None:
        """The replacement of s///e is Perl code: analysed as a program of its own."""
        if self.nested > 4:
            self.fail("nests code in substitutions too deeply")
            return
        inner = _Perl(source, self.nested + 1).analyse()
        self.fail(inner.unparseable.removeprefix("perl code "))
        self.out.commands.extend(inner.commands)
        self.out.scripts.extend(inner.scripts)
        self.out.reads.extend(inner.reads)
        self.out.writes.extend(inner.writes)

    def finish(self) -> None:
        if self.diamond and self.argv_changed:
            self.fail("changes what <> opens (@ARGV)")

    # -- values ------------------------------------------------------------------------------
    def fold(self, node: Node, depth: int) -> Value:
        kind = node.type
        if kind == "interpolated_string_literal":
            content = field(node, "content")
            return self.interpolated(content, depth) if content is not None else ("",)
        if kind == "string_literal":
            content = field(node, "content")
            raw = text(content) if content is not None else ""
            return (re.sub(r"\\([\\'])", r"\1", raw) if text(node).startswith("'") else raw,)
        if kind == "binary_expression" and _operator(node) == ".":
            left, right = field(node, "left"), field(node, "right")
            if left is not None and right is not None:
                return concat(self.value(left, depth), self.value(right, depth))
            return UNKNOWN
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.value(node.named_children[0], depth)
        if kind == "number" and text(node).isdigit():
            return (text(node),)
        if kind == "scalar" and text(node) != "$_":
            return self.name_value(text(node), depth)
        if kind == "autoquoted_bareword":
            return (text(node),)
        return UNKNOWN

    def interpolated(self, content: Node, depth: int) -> Value:
        """The text with escapes decoded and scalars folded. Escapes are decoded from the
        text itself: the grammar's escape_sequence nodes may cover only part of one (`\\x`
        of `\\x76`)."""
        if content.type != "string_content":
            return UNKNOWN
        data = content.text or b""
        base = content.start_byte
        parts: list[Value] = []
        start = base
        for child in content.named_children:
            if child.type == "escape_sequence":
                continue
            parts.append((_decode(data[start - base: child.start_byte - base]),))
            parts.append(self.value(child, depth) if child.type == "scalar" else UNKNOWN)
            start = child.end_byte
        parts.append((_decode(data[start - base:]),))
        return concat(*parts)


def _decode(raw: bytes) -> str:
    return _ESCAPE.sub(_unescape, raw.decode("utf-8", "surrogateescape"))


def _function_name(node: Node) -> str | None:
    """The sub a call names (`system`, `CORE::unlink`, `POSIX::remove`); None when computed."""
    function = field(node, "function")
    if function is None:
        if node.type in ("func0op_call_expression", "func1op_call_expression"):
            first = node.children[0] if node.children else None
            return first.type if first is not None and not first.is_named else None
        return None
    if function.named_child_count:
        return None
    return _bare(text(function))


def _bare(name: str) -> str:
    name = name.lstrip("&").strip()
    return name.removeprefix("::").removeprefix("main::")


def _module_why(name: str) -> str:
    for module, why in t.SENSITIVE_MODULES.items():
        if name == module or name.startswith(module + "::"):
            return why
    return ""


def _operator(node: Node) -> str:
    operator = field(node, "operator")
    if operator is not None:
        return text(operator)
    for child in node.children:
        if not child.is_named:
            return child.type
    return ""


def _is_plain(assignment: Node) -> bool:
    return _operator(assignment) == "="


def _fopen(prefix: str) -> str:
    if prefix.startswith("+"):
        return "r+"
    return "w" if prefix.startswith(">") else "r"


def _unescape(match: re.Match[str]) -> str:
    simple, braces, hexa, octal, named, other = match.groups()
    if simple is not None:
        return _SIMPLE.get(simple, simple)
    for digits in (braces, hexa, named):
        if digits is not None:
            value = int(digits or "0", 16)
            return chr(value) if value < 0x110000 else "\ufffd"
    if octal is not None:
        return chr(int(octal, 8) & 0xFF)
    return other or ""
