"""Ruby programs (`ruby -e`), parsed with tree-sitter-ruby.

Ruby reaches processes through Kernel (`system`, `exec`, `spawn`, backticks, `%x`, `open("|...")`)
and a few classes (IO, Open3, PTY, Process); files through File, Dir, FileUtils, IO and
Pathname; the network through Net::HTTP, URI.open, sockets and HTTP gems. A call of one of
these with arguments this analysis can read becomes a script, a command, a read or a write.
Calls by a computed name (`send` of a computed symbol, `method`, `const_get`, `eval` of a
string, `instance_eval "..."`), a sensitive class or module used as a value
(`f = File`), sensitive methods passed as symbols (`&:system`), and aliases of them make the
program unparseable. String literals and comments are never actions.

The names and values (ruby_names.py) and the calls (ruby_calls.py) sit below the checks each
node kind gets, here.
"""

from __future__ import annotations

from tree_sitter import Node

from gateway.policy.shell.interp import ruby_tables as t
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.ruby_calls import RubyCalls
from gateway.policy.shell.interp.ruby_names import constant_name
from gateway.policy.shell.interp.treewalk import field, is_field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN


def analyse_ruby(source: str) -> CodeEffects:
    return _Ruby(source).analyse()


class _Ruby(RubyCalls):
    """A Ruby program's analysis: its calls, and the constants, symbols, aliases and
    environment changes that make it unparseable."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.checks = {"call": self.call, "subshell": self.subshell, "constant": self.constant,
                       "heredoc_beginning": self.heredoc,
                       "block_argument": self.block_argument, "alias": self.alias,
                       "assignment": self.env_assignment, "simple_symbol": self.symbol}

    # -- other checks ------------------------------------------------------------------------
    def subshell(self, node: Node) -> None:
        self.out.script(self.interpolated(node.named_children, 0), "backticks")

    def heredoc(self, node: Node) -> None:
        if "`" in text(node):
            self.fail("runs a command in a heredoc (<<`CMD`)")

    def constant(self, node: Node) -> None:
        """A sensitive class or module must be the receiver of a call it can read."""
        parent = self.parent(node)
        if parent is None:
            return
        entity: Node = node
        if parent.type == "scope_resolution":
            if is_field(parent, "name", node):
                return  # judged with its scope: Net::HTTP
            entity = parent
            outer = self.parent(entity)
            while outer is not None and outer.type == "scope_resolution" and is_field(
                    outer, "scope", entity):
                entity, outer = outer, self.parent(outer)
        name = (constant_name(entity) or text(node)).removeprefix("::")
        if name in t.FAIL_CONSTANTS:
            self.fail(f"uses {name}: it {t.FAIL_CONSTANTS[name]}")
            return
        if not _sensitive_constant(name):
            return
        holder = self.parent(entity)
        if holder is None:
            return
        if holder.type == "call" and is_field(holder, "receiver", entity):
            return
        if holder.type == "call" and is_field(holder, "method", entity):
            return  # Pathname("x"), URI("x")
        if holder.type == "argument_list" and self.include_argument(holder):
            return
        if holder.type in ("class", "module") and is_field(holder, "name", entity):
            return
        if holder.type in ("element_reference",) and name == "ENV" and is_field(
                holder, "object", entity):
            return
        if holder.type == "defined" or (name in ("STDIN",) and holder.type == "call"):
            return
        self.fail(f"uses {name} as a value")

    def include_argument(self, args: Node) -> bool:
        call = self.parent(args)
        method = field(call, "method") if call is not None and call.type == "call" else None
        return method is not None and text(method) in ("include", "extend", "prepend", "require")

    def block_argument(self, node: Node) -> None:
        inner = named_children(node)
        if inner and inner[0].type == "simple_symbol" and text(inner[0])[1:] in (
                t.SENSITIVE_SYMBOLS):
            self.fail(f"passes {text(inner[0])} as a block")

    def symbol(self, node: Node) -> None:
        parent = self.parent(node)
        if parent is not None and parent.type == "call" and is_field(parent, "receiver", node):
            method = field(parent, "method")
            if method is not None and text(method) == "to_proc" and text(node)[1:] in (
                    t.SENSITIVE_SYMBOLS):
                self.fail(f"makes a proc of {text(node)}")

    def alias(self, node: Node) -> None:
        names = [text(n).lstrip(":") for n in node.named_children]
        if any(n in t.SENSITIVE_SYMBOLS or n in t.KERNEL for n in names):
            self.fail(f"aliases {' '.join(names)}")

    def env_assignment(self, node: Node) -> None:
        left = field(node, "left")
        right = field(node, "right")
        if left is None or left.type != "element_reference":
            if left is not None and left.type == "global_variable" and text(left) in (
                    "$stdin", "$<"):
                self.out.plumbing = "replaces its stdin"
            return
        target = field(left, "object")
        if target is None or constant_name(target) not in ("ENV", "::ENV"):
            return
        keys = [k for k in named_children(left) if k.id != target.id]
        name = self.value(keys[0]) if len(keys) == 1 else UNKNOWN
        self.out.setenv(name, self.value(right) if right is not None else UNKNOWN)


def _sensitive_constant(name: str) -> bool:
    return (name in t.CLASSES or name in t.FAIL_CONSTANTS or name in t.NETWORK_CONSTANTS
            or name.startswith("Net::") or name in ("Pathname", "ENV", "URI", "STDIN"))
