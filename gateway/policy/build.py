"""One validated policy file -> one indexed `Layer` (rule ids derived, patterns compiled)."""

from __future__ import annotations

import os
import re
from collections import defaultdict

from gateway.policy.bash_rules import parse_bash_pattern
from gateway.policy.compiled import (
    AnyInput,
    BashCommand,
    BashPipeline,
    BashRegex,
    FieldRegex,
    Layer,
    Matcher,
    Rule,
)
from gateway.policy.model import PolicyFile, RuleSpec
from gateway.policy.rulestring import FAMILIES, compile_content, parse_rule, tool_glob
from gateway.policy.yamlsrc import Loc, Source

_VERB = {"deny": "denies", "ask": "asks before", "allow": "allows"}


def build_layer(source: Source, spec: PolicyFile) -> Layer:
    name = os.path.basename(source.path)
    file_monitor = spec.mode == "monitor"
    rules: list[Rule] = []
    for decision in ("deny", "ask", "allow"):
        for index, text in enumerate(getattr(spec.permissions, decision)):
            loc: Loc = ("permissions", decision, index)
            try:
                tools, glob, matcher = parse_rule(text)
            except ValueError as exc:
                raise source.error(str(exc), loc) from None
            rules.append(Rule(f"{name}:permissions.{decision}[{index}]", decision, file_monitor,
                              f"policy {name} {_VERB[decision]} {text}", tools, glob, matcher,
                              text))
    for index, rule_spec in enumerate(spec.rules):
        try:
            rules.append(_rich_rule(name, index, rule_spec, file_monitor))
        except ValueError as exc:
            raise source.error(str(exc), ("rules", index)) from None
    return _index(name, source.path, spec, rules)


def _rich_rule(file: str, index: int, spec: RuleSpec, file_monitor: bool) -> Rule:
    rule_id = spec.id or f"{file}:rules[{index}]"
    monitor = spec.mode == "monitor" if spec.mode is not None else file_monitor
    matcher: Matcher
    glob: re.Pattern[str] | None = None
    if spec.rule is not None:
        tools, glob, matcher = parse_rule(spec.rule)
        text = spec.rule
    elif spec.pipeline is not None:
        stages = tuple(
            tuple(parse_bash_pattern(_prefix(p)) for p in ((s,) if isinstance(s, str) else s))
            for s in spec.pipeline
        )
        tools, matcher = ("Bash",), BashPipeline(stages)
        text = " | ".join(s if isinstance(s, str) else "{" + ",".join(s) + "}"
                          for s in spec.pipeline)
    else:
        tool = spec.tool or ""  # RuleSpec validation guarantees a tool here
        glob = tool_glob(tool)
        tools = () if glob is not None else FAMILIES.get(tool, (tool,))
        content = spec.command or spec.path or spec.domain
        if content is not None:
            if spec.domain is not None and not content.startswith("domain:"):
                content = "domain:" + content
            matcher = compile_content(tool, content)
        elif spec.regex is not None:
            regex = re.compile(spec.regex)
            matcher = (BashRegex(regex) if tool == "Bash" and not spec.field
                       else FieldRegex(spec.field or "", regex))
        else:
            matcher = AnyInput()
        text = f"{tool}({content or spec.regex or ''})"
    reason = spec.reason or f"policy {file} {_VERB[spec.decision]} {text}"
    return Rule(rule_id, spec.decision, monitor, reason, tools, glob, matcher, text)


def _prefix(stage: str) -> str:
    """Pipeline stages name commands: `curl` means any curl invocation."""
    return stage if stage.endswith("*") else stage + ":*"


def _index(name: str, path: str, spec: PolicyFile, rules: list[Rule]) -> Layer:
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
        name, path, spec.mode, spec.default, spec.unparseable, tuple(rules),
        {k: tuple(v) for k, v in by_tool.items()}, tuple(tool_globs),
        {k: tuple(v) for k, v in bash_by_name.items()}, tuple(bash_generic), has_bash_deny,
    )


def _bash_matcher(matcher: Matcher) -> bool:
    return isinstance(matcher, BashCommand | BashRegex | BashPipeline)
