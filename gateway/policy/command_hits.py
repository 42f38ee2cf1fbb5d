"""Bash command rules over a scan's simple commands: each command against the rules naming
it and the generic ones, the commands an unknown program may wrap, producer -> consumer
chains for pipeline rules, and the layer's `unparseable` answer for a command that cannot
be fully known."""

from __future__ import annotations

from gateway.policy.bash_rules import Match
from gateway.policy.compiled import BashCommand, BashPipeline, BashRegex, Layer, Rule
from gateway.policy.outcome import Hit, hit, uncertain
from gateway.policy.shell.argv import normalize_name
from gateway.policy.shell.scan import Scan, SimpleCommand

LOOKAHEAD_HITS = 8
"""Denied command names looked for in one unknown program's arguments before giving up."""


def bash_hits(layer: Layer, bash: Scan, hits: list[Hit], *, files_by_hook: bool = True
              ) -> bool:
    """Adds per-command hits; True when every command that runs is allowed.
    `files_by_hook`: no OS sandbox holds the layer's path denies, the hook does."""
    all_allowed = not bash.unparseable and bool(bash.commands)
    generic = layer.bash_generic
    for command in bash.commands:
        allowed = False
        named = layer.bash_by_name.get(command.name, ())
        for rule in (*named, *generic) if generic else named:
            if isinstance(rule.matcher, BashPipeline):
                continue
            result = _match_command(rule, command)
            if result == Match.NO:
                continue
            if command.speculative:
                if rule.decision != "allow":
                    hits.append(uncertain(layer, rule, command.text,
                                          f"an unknown program ({command.via[-1][:-1]}) "
                                          "may run it"))
                continue
            if result == Match.YES:
                hits.append(hit(layer, rule, command.text))
                allowed = allowed or (rule.decision == "allow" and not rule.monitor)
            elif rule.decision != "allow":
                hits.append(uncertain(layer, rule, command.text,
                                      "a value computed at run time could match"))
        if command.opaque:
            _look_ahead(layer, command, hits)
        if not allowed or command.carries_code:  # wrappers too: allowing ls does not allow sudo ls
            all_allowed = False
    for rule in layer.bash_generic:
        if isinstance(rule.matcher, BashPipeline):
            chain = _pipeline(rule.matcher, bash)
            if chain:
                hits.append(hit(layer, rule, chain))
    if bash.unparseable and (layer.has_bash_deny or (files_by_hook and layer.has_file_deny)):
        what = "Bash deny rules" if layer.has_bash_deny else "file deny rules"
        hits.append(Hit(layer.name, f"{layer.name}:unparseable", layer.unparseable,
                        layer.mode == "monitor" or layer.unparseable_monitored,
                        f"{bash.unparseable}; such commands are not run while {what} "
                        "apply", "", "unparseable"))
    return all_allowed


def _look_ahead(layer: Layer, command: SimpleCommand, hits: list[Hit]) -> None:
    """An unknown program may be a wrapper: `frob --x rm -rf y` may run `rm -rf y`.

    Each argument that names a command a deny or ask rule is about is read as the start of
    a wrapped command; a match is uncertain (decided as the layer's `unparseable`).
    """
    found = 0
    words = command.words
    for start in range(1, len(words)):
        word = words[start]
        if word.dynamic or word.globby or (word.text.startswith(".") or ("/" in word.text
                                           and not word.text.startswith("/"))):
            continue
        name = normalize_name(word.text)
        rules = [r for r in layer.bash_by_name.get(name, ()) if r.decision != "allow"]
        if not rules:
            continue
        found += 1
        if found > LOOKAHEAD_HITS:
            return
        inner = SimpleCommand(name, " ".join(w.text for w in words[start:]), command.via,
                              words=tuple(words[start:]))
        for rule in rules:
            if _match_command(rule, inner) != Match.NO:
                hits.append(uncertain(layer, rule, command.text,
                                      f"{command.name} is not a program the gateway knows; "
                                      f"it may run `{inner.text[:80]}`"))
                return


def _match_command(rule: Rule, command: SimpleCommand) -> int:
    matcher = rule.matcher
    if isinstance(matcher, BashCommand):
        return matcher.pattern.match(command)
    if isinstance(matcher, BashRegex):
        return Match.YES if matcher.regex.search(command.text) else Match.NO
    return Match.NO


def _pipeline(matcher: BashPipeline, bash: Scan) -> str:
    """Text of a producer -> consumer chain matching the stages, or ''.

    Linear in the flows' size: each flow's stages are walked once per rule stage.
    """
    commands = bash.commands
    for flow in bash.flows:
        chain: list[str] = []
        position = 0
        for stage in matcher.stages:
            found = None
            while position < len(flow) and found is None:
                start, end = flow[position]
                found = next((commands[k].text for k in range(start, end)
                              if any(p.match(commands[k]) for p in stage)), None)
                position += 1
            if found is None:
                break
            chain.append(found)
        else:
            return " | ".join(chain)
    return ""
