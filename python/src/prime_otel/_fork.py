"""One process-wide ``os.register_at_fork`` hook for every live run.

A forked child (a dataloader worker, a multiprocessing pool) inherits the
run: it may keep logging into it, but it must never end it, because the
parent's run is still going. ``register_at_fork`` cannot be undone, so the
hook is installed once and runs are held weakly.

A multiprocessing worker leaves through ``os._exit``, past every ``atexit``
hook, and multiprocessing clears the exit finalizers it inherited when it
starts. What such a worker queued is sent by a finalizer registered from
multiprocessing's own after-fork callbacks, which run after that clearing.
"""

import os
import threading
import weakref
from typing import Any

_runs: "weakref.WeakSet[Any]" = weakref.WeakSet()
_lock = threading.Lock()
_installed = False


def register(run: Any) -> None:
    global _installed
    with _lock:
        _runs.add(run)
        if _installed or not hasattr(os, "register_at_fork"):
            return
        os.register_at_fork(after_in_child=_reset_all)
        _installed = True


def _reset_all() -> None:
    global _lock
    _lock = threading.Lock()  # the parent's may have been held by a thread the child lacks
    for run in list(_runs):
        try:
            run.reset_after_fork()
        except Exception:  # noqa: BLE001 - a fork hook must never raise
            pass


def register_multiprocessing(run: Any) -> None:
    """Have a multiprocessing child send what it queued when it exits."""
    try:
        from multiprocessing import util
    except ImportError:  # pragma: no cover - every CPython has it
        return
    util.register_after_fork(run, _finalize_in_child)


def _finalize_in_child(run: Any) -> None:
    from multiprocessing import util

    util.Finalize(run, run.flush_at_child_exit, exitpriority=10)
