"""Run keys in the environment: the one ``PRIME_RUN_KEY`` a launcher, a parent
process or this process's own earlier ``init()`` left there.

A key this very process exported belongs to its previous run, not to a
parent whose run it should join; the pid it was exported with tells the two
apart (a forked child has another pid), as ``prime_runs`` does with
``PRIME_RUN_ID``.
"""

import os
import sys
import uuid
from typing import Dict, Optional

from .errors import ConfigurationError

KEY_ENV = "PRIME_RUN_KEY"

#: Run keys this process put into PRIME_RUN_KEY, with the pid that did.
_exported: Dict[str, int] = {}


def inherited() -> Optional[str]:
    """PRIME_RUN_KEY when a launcher or a parent process set it; not when this
    process set it for a run it started before (a second init() is a new run)."""
    value = os.environ.get(KEY_ENV)
    if not value or _exported.get(value) == os.getpid():
        return None
    return value


def new(rank: int) -> str:
    """A fresh key for a run nobody named. Only rank 0 may draw one: ranks
    that each drew their own would become runs of their own."""
    if rank != 0:
        raise ConfigurationError(
            f"rank {rank} has no run key: set {KEY_ENV} (the same in every rank) in the launcher's environment"
        )
    key = "run-" + uuid.uuid4().hex[:16]
    # Processes this one starts from now on (ranks, workers) share the key.
    os.environ[KEY_ENV] = key
    _exported[key] = os.getpid()
    print(f"prime_otel: run key {key} (set {KEY_ENV}={key} to send more data to this run)", file=sys.stderr)
    return key


def retract(key: str) -> None:
    """Processes started after the run ended must not join it: the key leaves
    the environment if this process put it there."""
    if _exported.get(key) == os.getpid():
        if os.environ.get(KEY_ENV) == key:
            os.environ.pop(KEY_ENV, None)
        _exported.pop(key, None)
