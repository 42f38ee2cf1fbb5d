"""What a decision is made of: the rules that matched (hits, certain or uncertain), what
each layer decided on its own, and the layers combined strictest first (deny > ask > allow;
a layer that abstains has no say), monitor-mode hits recorded but not enforced, and what is
left to the OS sandbox saying so."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.policy.compiled import BUILTIN_LAYER, Layer, Policy, Rule
from gateway.types import Decision, DecisionKind, EnforcedBy

SEVERITY: dict[str, int] = {"deny": 3, "ask": 2, "allow": 1, "abstain": 0}


@dataclass(frozen=True)
class Hit:
    """One rule (or synthetic rule) that matched, with what it matched."""

    layer: str
    rule_id: str
    decision: DecisionKind
    monitor: bool
    reason: str
    matched: str
    rule_text: str


@dataclass(frozen=True, slots=True)
class LayerOutcome:
    """What one layer (file) decided on its own, before the layers are combined."""

    layer: str
    decision: DecisionKind
    rule_id: str = ""
    reason: str = ""
    matched: str = ""


def hit(layer: Layer, rule: Rule, matched: str, decision: DecisionKind | None = None,
        reason: str | None = None) -> Hit:
    return Hit(layer.name, rule.id, decision or rule.decision, rule.monitor,
               rule.reason if reason is None else reason, matched, rule.text)


def uncertain(layer: Layer, rule: Rule, matched: str, why: str) -> Hit:
    return hit(layer, rule, matched, layer.unparseable if rule.decision == "deny" else "ask",
               f"{rule.reason or rule.text} ({why})".strip())


def layer_outcome(layer: Layer, hits: list[Hit], allowed: bool, withheld: bool = False
                   ) -> LayerOutcome:
    enforced = [h for h in hits if not h.monitor]
    for kind in ("deny", "ask"):
        for hit in enforced:
            if hit.decision == kind:
                return LayerOutcome(layer.name, hit.decision, hit.rule_id, hit.reason, hit.matched)
    if allowed:
        first = next(h for h in enforced if h.decision == "allow")
        return LayerOutcome(layer.name, "allow", first.rule_id, first.reason, first.matched)
    if layer.default == "abstain" or (layer.default == "allow" and withheld):
        return LayerOutcome(layer.name, "abstain")
    return LayerOutcome(layer.name, layer.default, f"{layer.name}:default",
                        f"no rule of {layer.name} matched; its default is {layer.default}")


def combine(policy: Policy, outcomes: list[LayerOutcome], hits: list[Hit],
            held: list[Hit]) -> Decision:
    monitor_deny = next((h for h in hits if h.monitor and h.decision == "deny"), None)
    # Of equally strict outcomes, a policy file's names the rule its authors wrote; the
    # built-in layer's is the one left when no file's rule applies.
    best = max(outcomes, key=lambda o: (SEVERITY[o.decision], o.layer != BUILTIN_LAYER),
               default=None)
    kind: DecisionKind = best.decision if best is not None else "abstain"
    if best is not None and kind in ("deny", "ask"):
        rule_id, reason, matched = best.rule_id, best.reason, best.matched
    elif monitor_deny is not None:
        rule_id, matched = monitor_deny.rule_id, monitor_deny.matched
        reason = f"monitor mode, would deny: {monitor_deny.reason}".rstrip(": ")
    elif best is not None:
        rule_id, reason, matched = best.rule_id, best.reason, best.matched
    else:
        rule_id = reason = matched = ""
    enforced_by: EnforcedBy = "hook"
    enforced = sorted((h for h in held if not h.monitor), key=lambda h: h.layer == BUILTIN_LAYER)
    if enforced and kind not in ("deny", "ask"):
        enforced_by = "sandbox"
        if not rule_id:
            rule_id, reason, matched = enforced[0].rule_id, enforced[0].reason, enforced[0].matched
    return Decision(kind, rule_id, reason, monitor_deny is not None, matched, policy.bundle_hash,
                    policy.self_protection, enforced_by)
