"""YAML read with line numbers: every mapping key and list item keeps where it was written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from gateway.errors import PolicyError

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Source:
    path: str
    data: Any
    lines: dict[Loc, int]

    def line(self, loc: Sequence[str | int]) -> int:
        """Line of the deepest known part of `loc` (1 when nothing matches)."""
        best = 1
        prefix: Loc = ()
        for part in loc:
            if (*prefix, part) in self.lines:  # parts pydantic adds (union tags) are skipped
                prefix = (*prefix, part)
                best = self.lines[prefix]
        return best

    def error(self, message: str, loc: Sequence[str | int] = ()) -> PolicyError:
        return PolicyError(message, path=self.path, line=self.line(loc))


def load_source(path: str, text: str) -> Source:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise PolicyError("the file is empty", path=path, line=1)
        lines: dict[Loc, int] = {(): node.start_mark.line + 1}
        _walk(node, (), lines, path)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark is not None and "stream end" in str(exc.problem):
            mark = exc.context_mark  # an unclosed bracket: point at where it was opened
        line = mark.line + 1 if mark is not None else 1
        raise PolicyError(f"invalid YAML: {exc.problem or exc.context}", path=path,
                          line=line) from None
    except yaml.YAMLError as exc:
        raise PolicyError(f"invalid YAML: {exc}", path=path, line=1) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise PolicyError("the file must be a mapping of keys", path=path, line=lines[()])
    return Source(path, data, lines)


def _walk(node: yaml.Node, loc: Loc, lines: dict[Loc, int], path: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                raise PolicyError(f"duplicate key {key!r}", path=path,
                                  line=key_node.start_mark.line + 1)
            seen.add(key)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*loc, key), lines, path)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            _walk(item, (*loc, index), lines, path)
