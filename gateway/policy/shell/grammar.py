"""Compiled tree-sitter grammars, loaded as cheaply as one hook process can.

`import tree_sitter_bash` runs the package's `__init__`, which imports `importlib.resources`
for its highlight queries: about 10 ms of a command hook's start for nothing it uses. The
grammar itself is the package's `_binding` extension; it is loaded from the installed package
directly, the same file the import would load. The interpreter analysers load theirs the same
way, and only when a command runs that interpreter.
"""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import PathFinder
from importlib.util import find_spec, module_from_spec


def grammar_language(package: str, function: str = "language") -> object:
    """The grammar's `language()` (or `function()`) result, for `tree_sitter.Language`:
    a capsule, or a pointer as an int from bindings built by older tree-sitter tooling."""
    module = sys.modules.get(package) or sys.modules.get(f"{package}._binding")
    if module is None:
        found = find_spec(package)  # finds the package without running its __init__
        locations = found.submodule_search_locations if found is not None else None
        spec = PathFinder.find_spec(f"{package}._binding", locations) if locations else None
        if spec is None or spec.loader is None:
            module = importlib.import_module(package)  # an unusual install: let it find its binding
        else:
            module = module_from_spec(spec)
            spec.loader.exec_module(module)
    return getattr(module, function)()


def bash_language() -> object:
    """The bash grammar's `language()` capsule, for `tree_sitter.Language`."""
    return grammar_language("tree_sitter_bash")
