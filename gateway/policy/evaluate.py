"""decide(policy, call): the one decision function for every vantage point.

Each layer (file) is evaluated on its own: deny > ask > allow > the layer's default, with
monitor-mode rules recorded but not enforced. Layers then combine strictest-first (deny > ask >
allow; a layer that abstains has no say), so a lower file can add restrictions but never lift
an upper one. Pure apart from resolving symlinks of paths that exist.

A session under the OS sandbox compiled from the policy (`sandboxed`, see policy/sandbox.py)
gets the same decisions but one: a deny path rule that could apply only in a way the kernel
sees (a path computed at run time, a glob that names no file yet, a file an unknown program may
open, a hard-linked file whose other names could not all be searched) is left to the sandbox,
which holds it, instead of being denied as uncertain. The decision says so (`enforced_by`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gateway.policy.callmatch import CANNOT_TELL, CallFacts, match_call, path_rules_left, summary
from gateway.policy.command_hits import bash_hits
from gateway.policy.compiled import Layer, Policy, Rule
from gateway.policy.file_hits import ResolvedPaths, file_hits
from gateway.policy.outcome import Hit, LayerOutcome, combine, hit, layer_outcome, uncertain
from gateway.policy.pathrules import UNION_FROM
from gateway.policy.paths import deciding
from gateway.policy.session_dir import session_directory
from gateway.policy.shadowing import RULE as SHADOWING_RULE
from gateway.policy.shadowing import shadowing_write
from gateway.policy.shell.scan import Scan, scan
from gateway.types import Decision, ToolCall

__all__ = [
    "LIMIT_RULE", "SANDBOX_RULE", "UNION_FROM", "Explanation", "Hit", "LayerOutcome", "decide",
    "explain",
]


@dataclass(frozen=True)
class Explanation:
    decision: Decision
    hits: tuple[Hit, ...]
    scan: Scan | None
    layer_outcomes: tuple[LayerOutcome, ...]
    """What each layer decided, org first."""
    allow_withheld: str = ""
    """Why allow rules (and `default: allow`) could not cover this Bash command."""
    held: tuple[Hit, ...] = ()
    """Deny path rules that could apply only as the kernel sees, left to the OS sandbox."""


def decide(policy: Policy, call: ToolCall, *, sandboxed: bool = False,
           sandbox_unavailable: str = "") -> Decision:
    return explain(policy, call, sandboxed=sandboxed,
                   sandbox_unavailable=sandbox_unavailable).decision


LIMIT_RULE = "builtin:analysis-limit"
SANDBOX_RULE = "builtin:sandbox-required"


def explain(policy: Policy, call: ToolCall, *, sandboxed: bool = False,
            sandbox_unavailable: str = "") -> Explanation:
    """`sandboxed`: the session runs under the OS sandbox compiled from this policy (the
    caller has checked the fingerprint its settings carry; see handlers/decision.py).
    `sandbox_unavailable`: why the sandbox cannot start for this session ('' when it can or
    nobody tried): with `sandbox: required`, Bash is then denied. `~` stands for
    `call.environ`'s HOME (the password database's entry when it has none)."""
    root = session_directory(call.cwd, call.transcript_path, call.environ)
    with deciding(call.environ, project_root=root):
        return _explain(policy, call, sandboxed, sandbox_unavailable)


def _explain(policy: Policy, call: ToolCall, sandboxed: bool, sandbox_unavailable: str
             ) -> Explanation:
    if policy.sandbox == "required" and call.tool_name == "Bash":
        refusal = ""
        if sandbox_unavailable:
            refusal = (f"the policy requires Claude Code's OS sandbox for Bash, which cannot "
                       f"start here: {sandbox_unavailable}")
        elif _unsandboxed(call):
            refusal = ("the policy requires Claude Code's OS sandbox for every Bash command; "
                       "run it without dangerouslyDisableSandbox")
        if refusal:
            decision = Decision("deny", SANDBOX_RULE, refusal, policy_hash=policy.bundle_hash,
                                self_protection=policy.self_protection)
            return Explanation(decision, (), None, ())
    bash = _bash_scan(call)
    if bash is not None and bash.refused:
        decision = Decision("deny", LIMIT_RULE, f"agent-gateway: {bash.refused}",
                            policy_hash=policy.bundle_hash)
        return Explanation(decision, (), bash, ())
    shadowing = shadowing_write(call, bash) if policy.self_protection else ""
    if shadowing:
        decision = Decision("deny", SHADOWING_RULE, f"agent-gateway: {shadowing}",
                            policy_hash=policy.bundle_hash)
        return Explanation(decision, (), bash, ())
    all_hits: list[Hit] = []
    held: list[Hit] = []
    outcomes: list[LayerOutcome] = []
    withheld = _allow_withheld(bash) if bash is not None else ""
    resolved = ResolvedPaths(policy, call, bash) if bash is not None and bash.accesses else None
    facts = CallFacts(call)
    for layer in policy.layers:
        hits, allowed = _layer_hits(layer, call, bash, resolved, held if sandboxed else None,
                                    facts)
        all_hits.extend(hits)
        outcomes.append(layer_outcome(layer, hits, allowed and not withheld, bool(withheld)))
    return Explanation(
        combine(policy, outcomes, all_hits, held),
        tuple(all_hits),
        bash,
        tuple(outcomes),
        withheld,
        tuple(held),
    )


def _unsandboxed(call: ToolCall) -> bool:
    """A Bash call that asks Claude Code to run it outside the sandbox."""
    flag = call.tool_input.get("dangerouslyDisableSandbox")
    return flag is not None and flag is not False


def _allow_withheld(bash: Scan) -> str:
    """An allow promises that nothing else runs: never for a Bash command that is not fully
    known, or that carries code in options or environment (the safe-allow rule)."""
    if bash.unparseable:
        return f"it cannot be fully analysed ({bash.unparseable})"
    if bash.unsafe_for_allow:
        return bash.unsafe_for_allow
    for command in bash.commands:
        if command.carries_code:
            return f"`{command.text[:80]}`: {command.carries_code}"
        if command.speculative:
            return f"`{command.text[:80]}` may be run by a program the gateway does not know"
    return ""


def _bash_scan(call: ToolCall) -> Scan | None:
    if call.tool_name != "Bash":
        return None
    command = call.tool_input.get("command")
    return scan(command if isinstance(command, str) else "", call.cwd)


def _rules_for(layer: Layer, tool: str, named: Iterable[Rule] | None = None
               ) -> Iterable[Rule]:
    """The layer's rules for a tool: `named` (those naming it, when some are ruled out
    already) or all of them, then the tool globs that match it."""
    yield from layer.by_tool.get(tool, ()) if named is None else named
    for rule in layer.tool_globs:
        if rule.tool_glob is not None and rule.tool_glob.fullmatch(tool):
            yield rule


def _layer_hits(layer: Layer, call: ToolCall, bash: Scan | None, resolved: ResolvedPaths | None,
                held: list[Hit] | None, facts: CallFacts) -> tuple[list[Hit], bool]:
    """Matching rules of one layer, and whether allow rules cover the whole call. `held`
    (a sandboxed session) collects what is left to the sandbox instead of denied."""
    hits: list[Hit] = []
    tool_allowed = False
    for rule in _rules_for(layer, call.tool_name, path_rules_left(layer, call, facts)):
        matched = match_call(rule, call, bash, facts)
        if matched is CANNOT_TELL:
            hits.append(uncertain(layer, rule, summary(call), "it has other names (hard "
                                  "links) the gateway could not finish searching"))
        elif matched is not None:
            hits.append(hit(layer, rule, matched))
            tool_allowed = tool_allowed or (rule.decision == "allow" and not rule.monitor)
    if bash is None:
        return hits, tool_allowed
    if resolved is not None:
        file_hits(layer, call, bash, hits, resolved, held)
    return hits, bash_hits(layer, bash, hits, files_by_hook=held is None) or tool_allowed
