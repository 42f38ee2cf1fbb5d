"""The policy file schema (pydantic v2). Unknown keys are errors."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.compaction import CompactionSettings

EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
Effort = Literal["low", "medium", "high", "xhigh", "max"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


RULE_ID = r"^[A-Za-z0-9_.:\-]+$"


class ListedRule(_Strict):
    """A permissions entry with a stable id, `{rule: "Bash(git push --force:*)", id:
    no-force-push}`: decisions, audit records, spans and metrics name it by its id, which
    does not change when rules are inserted above it (a bare string is named by position)."""

    rule: str
    id: str | None = Field(default=None, pattern=RULE_ID)


class Permissions(_Strict):
    """Claude Code's own `permissions:` lists, rule strings verbatim (or with an id)."""

    deny: tuple[str | ListedRule, ...] = ()
    ask: tuple[str | ListedRule, ...] = ()
    allow: tuple[str | ListedRule, ...] = ()

    def entries(self, decision: str) -> list[tuple[int, str, str | None]]:
        """(position, rule string, its id if given) of one list."""
        return [(index, entry, None) if isinstance(entry, str) else (index, entry.rule, entry.id)
                for index, entry in enumerate(getattr(self, decision))]


class RuleSpec(_Strict):
    """A rule with an id, a reason for the model, and either a rule string or a match form."""

    id: str | None = Field(default=None, pattern=RULE_ID)
    reason: str = ""
    decision: Literal["deny", "ask", "allow"] = "deny"
    mode: Literal["enforce", "monitor"] | None = None
    rule: str | None = None
    tool: str | None = None
    command: str | None = None
    path: str | None = None
    domain: str | None = None
    regex: str | None = None
    field: str | None = None
    pipeline: tuple[str | tuple[str, ...], ...] | None = Field(default=None, min_length=2)

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"bad regex {value!r}: {exc}") from None
        return value

    @model_validator(mode="after")
    def _one_form(self) -> RuleSpec:
        forms = [name for name in ("rule", "tool", "pipeline") if getattr(self, name) is not None]
        if len(forms) != 1:
            raise ValueError("give exactly one of 'rule', 'tool' or 'pipeline'")
        specifics = [n for n in ("command", "path", "domain") if getattr(self, n) is not None]
        if self.tool is None and (specifics or self.regex is not None or self.field):
            raise ValueError("'command', 'path', 'domain', 'regex' and 'field' need 'tool'")
        if len(specifics) + (self.regex is not None) > 1:
            raise ValueError("give at most one of 'command', 'path', 'domain', 'regex'")
        if self.field is not None and self.regex is None:
            raise ValueError("'field' goes with 'regex'")
        return self


class LimitsSpec(_Strict):
    """Caps on `agent-gateway run` that callers cannot raise."""

    max_turns: int | None = Field(default=None, gt=0)
    max_budget_usd: float | None = Field(default=None, gt=0)
    models: tuple[str, ...] | None = None
    effort: Effort | tuple[Effort, ...] | None = None
    """A list of allowed levels, or one level meaning 'at most this'."""

    def effort_levels(self) -> tuple[str, ...] | None:
        if self.effort is None:
            return None
        if isinstance(self.effort, str):
            return EFFORT_LEVELS[: EFFORT_LEVELS.index(self.effort) + 1]
        return tuple(level for level in EFFORT_LEVELS if level in self.effort)


class EnvironmentSpec(_Strict):
    """What the session's commands do not inherit."""

    withhold: tuple[str, ...] = ()
    """Variable names or shell patterns (`DEPLOY_*`) withheld from every command the agent
    runs, beyond the built-in list of the organization's and the gateway's secrets."""

    @field_validator("withhold")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_*?][A-Za-z0-9_*?]*", name):
                raise ValueError(f"{name!r} is not a variable name or pattern (letters, "
                                 "digits, _, * and ?)")
        return value


class PolicyFile(_Strict):
    version: Literal[1]
    name: str = ""
    mode: Literal["enforce", "monitor"] = "enforce"
    default: Literal["allow", "ask", "deny", "abstain"] = "abstain"
    unparseable: Literal["deny", "ask"] = "deny"
    permissions: Permissions = Permissions()
    rules: tuple[RuleSpec, ...] = ()
    limits: LimitsSpec = LimitsSpec()
    compaction: CompactionSettings | None = None
    tools: tuple[str, ...] = ()
    """Tools the sessions have beyond Claude Code's own (an SDK app's custom tools), so that
    rules may name them: a rule naming a tool that is neither Claude Code's, an MCP tool nor
    declared here is an error (it would never match)."""
    self_protection: bool = True
    """The built-in rules that protect the gateway (org file only; false is audited)."""
    lift: tuple[str, ...] = ()
    """Built-in credential-store rules lifted by id (`builtin:credential-store:npm`; org
    file only): where the agents must use that tool's credentials."""
    environment: EnvironmentSpec = EnvironmentSpec()
    sandbox: Literal["required", "off"] = "off"
    """`required`: file rules and self-protection are also compiled into Claude Code's OS
    sandbox, and the hook leaves to it what only the kernel sees (docs/sandbox.md). The
    default is `off` because `required` is a platform requirement (bubblewrap and socat on
    Linux) that Claude Code enforces by refusing to start without them: a file that does not
    ask for it keeps the meaning it had. Any file may require it; none may undo it."""

    @field_validator("sandbox", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        # YAML 1.1 reads a bare `off` (and `no`, `false`) as false
        if value is False:
            return "off"
        if value is True:
            raise ValueError("say 'required' or 'off'")
        return value
