"""The compiled policy: plain frozen dataclasses, no pydantic or yaml.

This is what `decide` reads; `cache_format` turns it into plain JSON data and back.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gateway.policy.bash_rules import BashPattern
from gateway.policy.domains import DomainPattern
from gateway.policy.paths import PathPattern

if TYPE_CHECKING:
    from gateway.compaction import CompactionSettings

RuleDecision = Literal["deny", "ask", "allow"]
BUILTIN_LAYER = "builtin"
"""The layer of self-protection rules (gateway/policy/builtin.py)."""
Default = Literal["deny", "ask", "allow", "abstain"]
SandboxMode = Literal["required", "off"]


@dataclass(frozen=True)
class AnyInput:
    """A bare tool name: every call of the tool."""


@dataclass(frozen=True)
class BashCommand:
    pattern: BashPattern


@dataclass(frozen=True)
class BashRegex:
    """A regex searched in each simple command (normalized words joined by spaces)."""

    regex: re.Pattern[str]


@dataclass(frozen=True)
class BashPipeline:
    """Output of a command matching one stage flows into a command matching the next."""

    stages: tuple[tuple[BashPattern, ...], ...]


@dataclass(frozen=True)
class PathRule:
    pattern: PathPattern


@dataclass(frozen=True)
class DomainRule:
    pattern: DomainPattern


@dataclass(frozen=True)
class FieldRegex:
    """A regex searched in one tool_input field (or the whole input as JSON)."""

    field: str
    regex: re.Pattern[str]
    full: bool = False
    """Whole-value match (a glob from `Tool(content)`) rather than a search."""


Matcher = AnyInput | BashCommand | BashRegex | BashPipeline | PathRule | DomainRule | FieldRegex


@dataclass(frozen=True)
class Rule:
    id: str
    decision: RuleDecision
    monitor: bool
    reason: str
    tools: tuple[str, ...]
    """Exact tool names this rule applies to; empty when `tool_glob` is set."""
    tool_glob: re.Pattern[str] | None
    matcher: Matcher
    text: str
    """The rule as written, for explanations."""
    listed: bool = False
    """From a `permissions:` list (Claude Code's own syntax: the floor mirrors it)."""


@dataclass(frozen=True)
class Layer:
    """One policy file's rules, indexed for lookup."""

    name: str
    path: str
    mode: Literal["enforce", "monitor"]
    default: Default
    unparseable: Literal["deny", "ask"]
    rules: tuple[Rule, ...]
    by_tool: Mapping[str, tuple[Rule, ...]]
    """Tool name -> rules other than Bash command-name rules."""
    tool_globs: tuple[Rule, ...]
    bash_by_name: Mapping[str, tuple[Rule, ...]]
    bash_generic: tuple[Rule, ...]
    """Bash rules checked against every simple command (name globs, regexes, pipelines)."""
    has_bash_deny: bool
    has_file_deny: bool = False
    """A deny on a path (Read, Edit, ...): without the OS sandbox the hook holds it for Bash
    too, so a Bash command it cannot fully read is decided as `unparseable`."""
    unparseable_monitored: bool = False
    """The built-in layer under an org policy in monitor mode: its `unparseable` answer is
    recorded, not enforced (its path denies still are)."""
    memo: dict[tuple[str, ...], Any] = field(default_factory=dict, compare=False, repr=False)
    """What the evaluator works out once per layer (its path rules' unions, by tool and by
    access; see pathrules.py)."""


@dataclass(frozen=True)
class Limits:
    """Caps on `agent-gateway run`; None means no cap."""

    max_turns: int | None = None
    max_budget_usd: float | None = None
    models: tuple[str, ...] | None = None
    effort: tuple[str, ...] | None = None
    """Allowed effort levels, lowest first."""

    def allows_model(self, model: str) -> bool:
        return self.models is None or model in self.models

    def allows_effort(self, effort: str) -> bool:
        return self.effort is None or effort in self.effort


@dataclass(frozen=True)
class Policy:
    layers: tuple[Layer, ...]
    bundle_hash: str
    limits: Limits = Limits()
    compaction: Mapping[str, Any] | None = None
    """The merged `compaction:` section as plain data; see `compaction_settings()`."""
    self_protection: bool = True
    """False when the org file turned the built-in self-protection rules off (audited)."""
    sandbox: SandboxMode = "off"
    """`required` when any file asks for Claude Code's OS sandbox (policy/sandbox.py)."""
    memo: dict[tuple[str, ...], tuple[Any, ...]] = field(
        default_factory=dict, compare=False, repr=False)
    """What the evaluator works out once per policy (the search roots of its path rules per
    cwd and home): held here, so a decision depends on the policy and the call only."""
    sandbox_fingerprint: str = ""
    """Identifies the sandbox settings compiled from this policy: a session whose settings
    carry it runs under a sandbox that holds this policy's file rules (policy/sandbox.py)."""
    withheld_env: tuple[str, ...] = ()
    """Variable names and patterns the policy files withhold from the agent's commands,
    beyond the built-in secrets (policy/withheld_env.py)."""

    @property
    def rule_count(self) -> int:
        """Rules of the policy files (the built-in self-protection rules not counted)."""
        return sum(len(layer.rules) for layer in self.file_layers)

    @property
    def file_layers(self) -> tuple[Layer, ...]:
        return tuple(layer for layer in self.layers if layer.name != BUILTIN_LAYER)

    @property
    def builtin_rules(self) -> tuple[Rule, ...]:
        return tuple(r for layer in self.layers if layer.name == BUILTIN_LAYER
                     for r in layer.rules)

    def compaction_settings(self) -> CompactionSettings:
        """The merged section as `gateway.compaction.CompactionSettings` (imports pydantic)."""
        from gateway.compaction import CompactionSettings

        return CompactionSettings.model_validate(dict(self.compaction or {}))


def index_layer(name: str, path: str, mode: Literal["enforce", "monitor"], default: Default,
                unparseable: Literal["deny", "ask"], rules: Sequence[Rule]) -> Layer:
    """A layer's rules indexed for lookup (also rebuilt this way from the cache)."""
    by_tool: dict[str, list[Rule]] = defaultdict(list)
    bash_by_name: dict[str, list[Rule]] = defaultdict(list)
    bash_generic: list[Rule] = []
    tool_globs: list[Rule] = []
    for rule in rules:
        matcher = rule.matcher
        if isinstance(matcher, BashCommand) and matcher.pattern.name_glob is None:
            bash_by_name[matcher.pattern.name].append(rule)
        elif isinstance(matcher, BashCommand | BashRegex | BashPipeline):
            bash_generic.append(rule)
        elif rule.tool_glob is not None:
            tool_globs.append(rule)
        else:
            for tool in rule.tools:
                by_tool[tool].append(rule)
    has_bash_deny = any(
        r.decision == "deny" and ("Bash" in r.tools or _bash_matcher(r.matcher)) for r in rules
    )
    return Layer(
        name, path, mode, default, unparseable, tuple(rules),
        {k: tuple(v) for k, v in by_tool.items()}, tuple(tool_globs),
        {k: tuple(v) for k, v in bash_by_name.items()}, tuple(bash_generic), has_bash_deny,
        any(r.decision == "deny" and isinstance(r.matcher, PathRule) for r in rules),
    )


def _bash_matcher(matcher: Matcher) -> bool:
    return isinstance(matcher, BashCommand | BashRegex | BashPipeline)
