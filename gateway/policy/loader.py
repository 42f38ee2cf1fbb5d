"""load_policy(paths): read, validate, check layering, compile. All or nothing."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from gateway.errors import PolicyError
from gateway.policy.build import build_layer
from gateway.policy.builtin import Protected, builtin_layer
from gateway.policy.cache import bundle_hash, read_files
from gateway.policy.compiled import Policy
from gateway.policy.layering import (
    check_conflicts,
    merge_compaction,
    merge_limits,
    merge_sandbox,
    merge_withheld,
)
from gateway.policy.model import PolicyFile
from gateway.policy.protected import protected_paths
from gateway.policy.sandbox import sandbox_fingerprint
from gateway.policy.tool_names import tool_problems
from gateway.policy.yamlsrc import Source, load_source


def load_policy(paths: Sequence[str], protected: Protected | None = None) -> Policy:
    return compile_bundle(read_files(paths), protected)


def compile_bundle(bundle: Sequence[tuple[str, bytes]], protected: Protected | None = None
                   ) -> Policy:
    """`protected`: what the built-in rules guard (default: read from this host)."""
    files = [parse_file(path, data) for path, data in bundle]
    for problem in tool_problems(files):
        raise problem
    check_conflicts(files)
    layers = tuple(build_layer(source, spec) for source, spec in files)
    guarded = files[0][1].self_protection if files else True
    if guarded:
        if protected is None:
            protected = protected_paths([path for path, _ in bundle])
        lifted = frozenset(files[0][1].lift) if files else frozenset()
        asks = bool(layers) and all(layer.unparseable == "ask" for layer in layers)
        layers = (builtin_layer(protected, lifted, "ask" if asks else "deny",
                                monitored=layers[0].mode == "monitor"), *layers)
    sandbox = merge_sandbox(files)
    withheld = merge_withheld(files)
    fingerprint = sandbox_fingerprint(layers, withheld) if sandbox == "required" else ""
    return Policy(
        layers,
        bundle_hash(bundle),
        merge_limits(files),
        merge_compaction(files),
        self_protection=guarded,
        sandbox=sandbox,
        sandbox_fingerprint=fingerprint,
        withheld_env=withheld,
    )


def parse_file(path: str, data: bytes) -> tuple[Source, PolicyFile]:
    """One file's bytes, read and validated on their own (PolicyError at file:line)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError(f"not UTF-8 text: {exc.reason}", path=path, line=1) from None
    source = load_source(path, text)
    return source, validate(source)


def validate(source: Source) -> PolicyFile:
    try:
        return PolicyFile.model_validate(source.data)
    except ValidationError as exc:
        errors = exc.errors()
        # A permissions entry is a string or a {rule, id} mapping: a mapping's own error is the
        # one that explains it (not "should be a valid string"), and neither form is a place.
        error = next((e for e in errors if _UNION_TAGS[1] in e["loc"]), errors[0])
        loc = tuple(p for p in error["loc"] if p not in _UNION_TAGS)
        where = ".".join(str(p) if isinstance(p, str) else f"[{p + 1}]" for p in loc)
        where = where.replace(".[", "[")
        if error["type"] == "extra_forbidden":
            message = f"unknown key {loc[-1]!r}" + (f" in {where.rsplit('.', 1)[0]}"
                                                    if len(loc) > 1 else "")
            close = difflib.get_close_matches(str(loc[-1]), _keys_at(loc[:-1]), n=1)
            message += f" (did you mean {close[0]!r}?)" if close else ""
        else:
            message = f"{where}: {_clean(error['msg'])}" if where else _clean(error["msg"])
        raise source.error(message, loc) from None


_UNION_TAGS = ("str", "ListedRule")


def _keys_at(loc: Sequence[object]) -> list[str]:
    """The keys the schema has where `loc` points (list positions step into the items)."""
    model: type[BaseModel] | None = PolicyFile
    for part in loc:
        if model is None:
            return []
        if isinstance(part, str):
            field = model.model_fields.get(part)
            model = _model_in(field.annotation) if field is not None else None
    return sorted(model.model_fields) if model is not None else []


def _model_in(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _clean(msg: str) -> str:
    return msg.removeprefix("Value error, ")
