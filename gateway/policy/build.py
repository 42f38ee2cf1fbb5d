"""One validated policy file -> one indexed `Layer` (rule ids derived, patterns compiled)."""

from __future__ import annotations

import os
import re

from gateway.policy.bash_rules import parse_bash_pattern
from gateway.policy.compiled import (
    AnyInput,
    BashPipeline,
    BashRegex,
    FieldRegex,
    Layer,
    Matcher,
    Rule,
    index_layer,
)
from gateway.policy.model import PolicyFile, RuleSpec
from gateway.policy.rulestring import FAMILIES, compile_content, parse_rule, tool_glob
from gateway.policy.yamlsrc import Loc, Source

_VERB = {"deny": "denies", "ask": "asks before", "allow": "allows"}


def build_layer(source: Source, spec: PolicyFile) -> Layer:
    name = os.path.basename(source.path)
    file_monitor = spec.mode == "monitor"
    rules: list[Rule] = []
    ids: dict[str, Loc] = {}
    for decision in ("deny", "ask", "allow"):
        for index, text, given_id in spec.permissions.entries(decision):
            loc: Loc = ("permissions", decision, index)
            try:
                tools, glob, matcher = parse_rule(text)
            except ValueError as exc:
                raise source.error(str(exc), loc) from None
            # Positions are 1-based everywhere the user sees them: the first entry is [1].
            rule_id = given_id or f"{name}:permissions.{decision}[{index + 1}]"
            _unique(source, ids, rule_id, loc)
            rules.append(Rule(rule_id, decision, file_monitor,
                              f"policy {name} {_VERB[decision]} {text}", tools, glob, matcher,
                              text, listed=True))
    for index, rule_spec in enumerate(spec.rules):
        try:
            rule = _rich_rule(name, index, rule_spec, file_monitor)
        except ValueError as exc:
            raise source.error(str(exc), ("rules", index)) from None
        _unique(source, ids, rule.id, ("rules", index))
        rules.append(rule)
    return index_layer(name, source.path, spec.mode, spec.default, spec.unparseable, rules)


def _unique(source: Source, ids: dict[str, Loc], rule_id: str, loc: Loc) -> None:
    """Two rules of one file with one id would be one name for two decisions."""
    if rule_id in ids:
        raise source.error(f"rule id {rule_id!r} is already used at line "
                           f"{source.line(ids[rule_id])}", loc)
    ids[rule_id] = loc


def _rich_rule(file: str, index: int, spec: RuleSpec, file_monitor: bool) -> Rule:
    rule_id = spec.id or f"{file}:rules[{index + 1}]"
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
