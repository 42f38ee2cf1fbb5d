"""The compiled tree-sitter-bash grammar, loaded as cheaply as one hook process can.

`import tree_sitter_bash` runs the package's `__init__`, which imports `importlib.resources`
for its highlight queries: about 10 ms of a command hook's start for nothing it uses. The
grammar itself is the package's `_binding` extension; it is loaded from the installed package
directly, the same file the import would load.
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder
from importlib.util import find_spec, module_from_spec

_PACKAGE = "tree_sitter_bash"


def bash_language() -> object:
    """The grammar's `language()` capsule, for `tree_sitter.Language`."""
    package = sys.modules.get(_PACKAGE)
    if package is not None:
        return package.language()
    found = find_spec(_PACKAGE)  # finds the package without running its __init__
    locations = found.submodule_search_locations if found is not None else None
    spec = PathFinder.find_spec(f"{_PACKAGE}._binding", locations) if locations else None
    if spec is None or spec.loader is None:
        import tree_sitter_bash  # an unusual install: let the package find its binding

        return tree_sitter_bash.language()
    binding = module_from_spec(spec)
    spec.loader.exec_module(binding)
    return binding.language()
