"""What a ``Run`` does about its process: a forked child that keeps logging
but never ends the run, SIGINT and SIGTERM ending it as ``crashed`` as
``prime_runs`` does, and the exit hook that reports a run never finished.
Apart from ``run.py`` because none of it is the ``prime_runs`` API: it is
how the run outlives, or does not outlive, the process that holds it.
"""

import logging
import os
import signal
import threading
from typing import Any

from .models import RunStatus

logger = logging.getLogger("prime_otel")


class ProcessHooks:
    """The process side of ``Run``, which it is mixed into: it uses the
    run's ``id``, ``finish()`` and its finishing state."""

    def reset_after_fork(self) -> None:
        """A forked child keeps logging into the run but never ends it. Its
        queue is its own (``_delivery``); what it queued is sent when it exits,
        through its exit hook or, for a multiprocessing worker (which leaves
        through ``os._exit``), a multiprocessing finalizer (``_fork``)."""
        self._state_lock = threading.Lock()
        self._finish_lock = threading.Lock()
        self._finishing = False
        self._owns_lifecycle = False
        self._previous_signal_handlers = {}

    def flush_at_child_exit(self) -> None:
        """A forked worker's last word: send what it queued, within the budget."""
        if self._finished or self._pipeline is None:
            return
        try:
            self.finish(status=RunStatus.COMPLETED)
        except Exception as exc:  # noqa: BLE001
            logger.warning("prime_otel: sending a worker's records of run %s failed: %s", self.id, exc)

    def install_signal_handlers(self) -> None:
        """SIGINT and SIGTERM end the run as ``crashed`` before the process
        goes, as ``prime_runs`` does: only on the main thread, only over the
        default handlers, and the previous handler runs afterwards."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                current = signal.getsignal(signum)
                if current not in (signal.SIG_DFL, signal.default_int_handler):
                    continue
                signal.signal(signum, self._signal_handler)
            except (ValueError, OSError):
                continue
            self._previous_signal_handlers[signum] = current

    def _handle_signal(self, signum: int, frame: Any) -> None:
        previous = self._previous_signal_handlers.get(signum, signal.SIG_DFL)
        if signum == signal.SIGINT and previous is signal.default_int_handler:
            # Ctrl-C: the KeyboardInterrupt reaches `with run:` (or the exit
            # hook), which reports the run; finishing here first would leave
            # the trainer's own handling nothing to do.
            previous(signum, frame)
            return
        if not self._finished and not self._finishing:
            try:
                self.finish(status=RunStatus.CRASHED, error=f"received {signal.Signals(signum).name}")
            except Exception as exc:  # noqa: BLE001 - the signal must still go on
                logger.warning("prime_otel: reporting %s for run %s failed: %s", signal.Signals(signum).name, self.id, exc)
        signal.signal(signum, previous)
        if callable(previous):
            previous(signum, frame)
        else:
            os.kill(os.getpid(), signum)

    def _restore_signal_handlers(self) -> None:
        for signum, previous in list(self._previous_signal_handlers.items()):
            try:
                if signal.getsignal(signum) is self._signal_handler:
                    signal.signal(signum, previous)
            except (ValueError, OSError):
                continue
        self._previous_signal_handlers.clear()

    def _on_process_exit(self) -> None:
        if self._finished:
            return
        if self._owns_lifecycle:
            logger.warning("prime_otel: run %s was never finished; reporting it as crashed", self.id)
        try:
            self.finish(status=RunStatus.CRASHED, error="process exited without finishing the run")
        except Exception as exc:  # noqa: BLE001 - never a traceback from atexit
            logger.warning("prime_otel: reporting the crash of run %s failed: %s", self.id, exc)
