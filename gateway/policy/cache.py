"""Compiled policies cached on disk, keyed by the files' bytes, so a hook call that hits the
cache never imports pydantic or yaml (about 130 ms of a 150 ms budget).

The cache lives under the gateway's own state directory; whoever can write there can already
rewrite the audit log, so a pickle there adds no new trust boundary.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path

from gateway import __version__
from gateway.errors import PolicyError
from gateway.policy.compiled import Policy

FORMAT = "policy-cache-4"


def read_files(paths: Sequence[str]) -> list[tuple[str, bytes]]:
    if not paths:
        raise PolicyError("no policy file given (use --policy PATH)")
    bundle = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                bundle.append((path, handle.read()))
        except OSError as exc:
            raise PolicyError(f"cannot read policy file: {exc.strerror or exc}", path=path
                              ) from None
    return bundle


def cache_key(bundle: Sequence[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0".encode())
    for path, data in bundle:
        digest.update(os.path.basename(path).encode() + b"\0")
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def load_cached(paths: Sequence[str], cache_dir: Path) -> Policy:
    """The compiled policy for these files, from the cache or compiled and stored."""
    bundle = read_files(paths)
    entry = cache_dir / f"{cache_key(bundle)}.pickle"
    try:
        with open(entry, "rb") as handle:
            policy = pickle.load(handle)
        if isinstance(policy, Policy):
            return policy
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
        pass  # a miss or a stale entry: compile below
    from gateway.policy.loader import compile_bundle

    policy = compile_bundle(bundle)
    _store(entry, policy)
    return policy


def _store(entry: Path, policy: Policy) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".policy-")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(policy, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)  # atomic: concurrent hooks never read half a file
    except OSError:
        pass  # caching is an optimisation; deciding without it is still correct
