"""Policy test cases kept beside each policy (`org.yaml` -> `org.tests.yaml`).

Each case is a hook input (or the `tool` + `input` shorthand) with the expected decision. The
cases of file N run against the layers 1..N, so a team file's tests see the org rules too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from gateway.env import environment
from gateway.errors import PolicyError
from gateway.hookio.parse import parse_pre_tool_use
from gateway.policy.evaluate import decide
from gateway.policy.loader import load_policy
from gateway.policy.yamlsrc import load_source


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    tool: str | None = None
    input: dict[str, Any] | None = None
    hook_input: dict[str, Any] | None = None
    cwd: str = "/srv/project"
    expect: Literal["allow", "deny", "ask", "abstain"]
    rule: str | None = None
    would_deny: bool | None = None
    sandboxed: bool | None = None
    """Decide as a session under the OS sandbox compiled from the policy (default: when the
    policy says `sandbox: required`, as the sessions the gateway wires are)."""
    enforced_by: Literal["hook", "sandbox"] | None = None

    @model_validator(mode="after")
    def _one_input(self) -> Case:
        if (self.hook_input is None) == (self.tool is None):
            raise ValueError("give either 'hook_input' or 'tool' with 'input'")
        return self

    def hook(self) -> dict[str, Any]:
        if self.hook_input is not None:
            return {"hook_event_name": "PreToolUse", "cwd": self.cwd, **self.hook_input}
        return {"hook_event_name": "PreToolUse", "tool_name": self.tool,
                "tool_input": self.input or {}, "cwd": self.cwd}


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cases: tuple[Case, ...]


@dataclass(frozen=True)
class Outcome:
    path: str
    line: int
    name: str
    failure: str
    """'' when the case passed."""


def tests_path(policy_path: str) -> Path:
    path = Path(policy_path)
    return path.with_name(path.name.removesuffix(path.suffix) + ".tests" + path.suffix)


def run_cases(policy_paths: Sequence[str]) -> list[Outcome]:
    """Run every test file found beside the given policies; PolicyError on a bad file."""
    outcomes: list[Outcome] = []
    for count, policy_path in enumerate(policy_paths, start=1):
        path = tests_path(policy_path)
        if not path.exists():
            continue
        policy = load_policy(policy_paths[:count])
        source = load_source(str(path), path.read_text(encoding="utf-8"))
        try:
            cases = CaseFile.model_validate(source.data).cases
        except ValidationError as exc:
            error = exc.errors()[0]
            raise source.error(f"{'.'.join(map(str, error['loc']))}: {error['msg']}",
                               tuple(error["loc"])) from None
        for index, case in enumerate(cases):
            line = source.line(("cases", index))
            outcomes.append(Outcome(str(path), line, case.name, _check(policy, case)))
    return outcomes


def _check(policy: Any, case: Case) -> str:
    import json

    try:
        call = parse_pre_tool_use(json.dumps(case.hook()))
    except Exception as exc:
        return f"bad hook input: {exc}"
    # As the hook decides it: `~` is $HOME of the environment the call runs in (this one),
    # not the password database's entry (CI runners often have the two differ).
    call = dataclasses.replace(call, environ=environment())
    sandboxed = policy.sandbox == "required" if case.sandboxed is None else case.sandboxed
    decision = decide(policy, call, sandboxed=sandboxed)
    problems = []
    if decision.kind != case.expect:
        problems.append(f"expected {case.expect}, got {decision.kind}"
                        + (f" (rule {decision.rule_id})" if decision.rule_id else ""))
    if case.rule is not None and decision.rule_id != case.rule:
        problems.append(f"expected rule {case.rule}, got {decision.rule_id or 'none'}")
    if case.would_deny is not None and decision.would_deny != case.would_deny:
        problems.append(f"expected would_deny {case.would_deny}, got {decision.would_deny}")
    if case.enforced_by is not None and decision.enforced_by != case.enforced_by:
        problems.append(f"expected enforced_by {case.enforced_by}, got {decision.enforced_by}")
    return "; ".join(problems)


__all__ = ["Case", "CaseFile", "Outcome", "PolicyError", "run_cases", "tests_path"]
