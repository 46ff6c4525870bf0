"""The queue between the trainer's calls and the collector: bounded by bytes,
retried until the collector takes it, flushed against a budget.

Decisions, and why:

- **Kept until acknowledged.** A record leaves the queue when the collector
  answered its request with a success (or refused it for good). A collector
  that is absent at start, restarts or is down for minutes costs a wait, not
  data: the worker tries again with backoff (0.25 s doubling to 5 s, or the
  server's ``Retry-After``), for as long as the process lives.
- **Bounded by bytes, not records.** One episode may be 200 bytes or 2 MB;
  the bound is what the trainer's memory pays (``DEFAULT_MAX_BYTES``, or
  ``init(queue_bytes=)`` / ``PRIME_OTEL_QUEUE_BYTES``). Past it a new record is
  dropped, counted in ``dropped`` and said in one warning; the records already
  queued keep their place. The run's start and end events are never dropped.
- **One request at a time, in order.** Records reach the collector in the
  order they were logged, so a run's end never overtakes its data.
- **Batches, not single records.** The worker sends once a batch is full
  (``MAX_BATCH_RECORDS`` or ``MAX_BATCH_BYTES``), once the oldest queued
  record has waited ``LINGER`` seconds, or at once for a flush or a close.
  A request costs about as much CPU as encoding a hundred small records, so
  a worker that woke for every record would cost the trainer more than the
  records do (and take the GIL from it while it logs). ``put`` wakes the
  worker only when the queue was empty or a batch has filled.
- **Flush against a budget.** ``flush(timeout)`` waits for the records queued
  before it, and returns by its deadline whatever the worker is doing: a
  request in flight gets a timeout no longer than what is left of the budget.
  It answers with what was not delivered, so a caller can say so honestly.
  A flush also cuts the backoff short: it is a reason to try now.
- **A refused key is final.** A 401 or 403 fails that request's records
  (counted in ``failed``, with the transport's reason: whose key was
  refused), as any refusal does; it is said once, not per request, and kept
  in ``key_refusal`` for ``finish()`` to raise under ``on_error="raise"``.
  Later requests are still tried: each is its own answer.
- **Any other final refusal is told.** A 400 (or another final status), or a
  partial success's rejected records, is counted in ``failed``, warned about,
  and handed to ``on_refusal`` (the run puts it in ``run.errors``, and raises
  it under ``on_error="raise"``), as ``prime_runs`` reports a sink's failure.
- **Fork.** A child starts with an empty queue and its own worker (the
  parent's records are the parent's to send); the transport opens its own
  connection there.
"""

import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence

from ._transport import Outcome

logger = logging.getLogger("prime_otel")

DEFAULT_MAX_BYTES = 512 * 1024 * 1024
MAX_BATCH_RECORDS = 512
#: The collector's OTLP/HTTP receiver refuses a request over 20 MiB by
#: default; a request is kept under half of that.
MAX_BATCH_BYTES = 8 * 1024 * 1024
REQUEST_TIMEOUT = 10.0
#: How long a record may wait for more to share its request. The SDK's batch
#: processor waits 1 s; a finish or flush never waits for it.
LINGER = 0.5
BACKOFF_FIRST = 0.25
BACKOFF_MAX = 5.0
#: A request in flight when a flush's deadline is this close still gets this
#: long: a zero timeout would fail a request that was about to succeed.
MIN_REQUEST_TIMEOUT = 0.2


class Item:
    """One queued record, its size in bytes, its event name and its place."""

    __slots__ = ("record", "size", "kind", "seq")

    def __init__(self, record: Any, size: int, kind: str, seq: int = 0) -> None:
        self.record = record
        self.size = size
        self.kind = kind
        self.seq = seq


@dataclass
class KeyRefusal:
    """The first 401 or 403: ``message`` names the collector and whose key it refused."""

    status: int
    message: str


@dataclass
class Refusal:
    """A request the collector answered with a final refusal other than a
    refused key: ``records`` of it lost, the HTTP ``status`` (None for a
    partial success), and ``message`` naming the collector and its reason."""

    records: int
    status: Optional[int]
    message: str


@dataclass
class FlushResult:
    """What a flush left: ``undelivered`` of the records queued before it, by
    kind, and the last error the worker saw."""

    delivered: bool
    undelivered: int = 0
    by_kind: Dict[str, int] = field(default_factory=dict)
    last_error: str = ""


class Delivery:
    """``put`` from any thread; a daemon worker sends. ``send(items, timeout)``
    returns a ``_transport.Outcome`` for the whole batch."""

    def __init__(
        self,
        send: Callable[[Sequence[Item], float], Any],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_records: Optional[int] = None,
        batch_records: int = MAX_BATCH_RECORDS,
        batch_bytes: int = MAX_BATCH_BYTES,
        request_timeout: float = REQUEST_TIMEOUT,
        backoff_first: float = BACKOFF_FIRST,
        backoff_max: float = BACKOFF_MAX,
        linger: float = LINGER,
        where: str = "the collector",
        on_refusal: Optional[Callable[[Refusal], None]] = None,
    ) -> None:
        self._send = send
        self.max_bytes = max_bytes
        self.max_records = max_records
        self._batch_records = batch_records
        self._batch_bytes = batch_bytes
        self._request_timeout = request_timeout
        self._backoff_first = backoff_first
        self._backoff_max = backoff_max
        self._linger = linger
        self.where = where
        self.on_refusal = on_refusal
        self._reset()
        _at_fork(self)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: Deque[Item] = deque()
        self._bytes = 0
        self._seq = 0  # the last record put
        self._done = 0  # every record up to this one was delivered or refused for good
        self._deadlines: List[float] = []
        self._wake = False
        self._closed = False
        self._worker: Optional[threading.Thread] = None
        self._down_since: Optional[float] = None
        self._warned_full = False
        self.last_error = ""
        self.key_refusal: Optional[KeyRefusal] = None
        self.delivered = 0
        self.dropped = 0
        self.failed = 0

    # ------------------------------------------------------------ producers

    def put(self, record: Any, size: int, kind: str, essential: bool = False) -> bool:
        """Queue one record; False when it was dropped (the queue is full)."""
        warn = False
        with self._lock:
            if self._closed:
                return False
            queue = self._queue
            full = self._bytes + size > self.max_bytes or (self.max_records is not None and len(queue) >= self.max_records)
            if full and not essential:
                self.dropped += 1
                warn, self._warned_full = not self._warned_full, True
            else:
                self._seq += 1
                queue.append(Item(record, size, kind, self._seq))
                self._bytes += size
                if self._worker is None:
                    self._start_worker()
                # The worker waits for a first record, then for a batch to
                # fill (or its linger): only those two moments wake it.
                n = len(queue)
                if n == 1 or n == self._batch_records or self._bytes >= self._batch_bytes:
                    self._changed.notify_all()
        if warn:
            logger.warning(
                "prime_otel: the queue to %s is full (%d records, %d of %d bytes): new records are dropped and counted "
                "in run.dropped_records until it drains (last error: %s)",
                self.where, len(self._queue), self._bytes, self.max_bytes, self.last_error or "none",
            )
        return not (full and not essential)

    def flush(self, timeout: float) -> FlushResult:
        """Wait until every record queued before this call was delivered or
        refused for good, or ``timeout`` seconds passed."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            target = self._seq
            self._deadlines.append(deadline)
            self._wake = True
            if self._worker is not None and not self._worker.is_alive():
                self._start_worker()
            self._changed.notify_all()
            try:
                while self._done < target and not self._closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._changed.wait(left)
                pending = [item for item in self._queue if item.seq <= target]
            finally:
                self._deadlines.remove(deadline)
        by_kind: Dict[str, int] = {}
        for item in pending:
            by_kind[item.kind] = by_kind.get(item.kind, 0) + 1
        return FlushResult(not pending, len(pending), by_kind, self.last_error)

    def close(self) -> None:
        """No more records; the worker stops after its request in flight."""
        with self._lock:
            self._closed = True
            self._changed.notify_all()

    @property
    def down(self) -> bool:
        """Whether the collector's last answer was a failure that may pass."""
        return self._down_since is not None

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # --------------------------------------------------------------- worker

    def _start_worker(self) -> None:
        self._worker = threading.Thread(target=self._run, name="prime_otel-delivery", daemon=True)
        self._worker.start()

    def _run(self) -> None:
        backoff = self._backoff_first
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._changed.wait()
                self._linger_wait()
                if self._closed:
                    return
                batch = self._take()
                timeout = self._timeout()
            try:
                outcome = self._send(batch, timeout)
            except Exception as exc:  # noqa: BLE001 - a batch that cannot be encoded must not stop the worker
                outcome = Outcome(False, retry=False, error=f"the batch could not be sent: {type(exc).__name__}: {exc}")
            if outcome.ok or not outcome.retry:
                self._resolve(batch, outcome)
                backoff = self._backoff_first
                continue
            self._note_down(outcome.error)
            wait = outcome.retry_after if outcome.retry_after is not None else backoff
            backoff = min(self._backoff_max, backoff * 2)
            self._sleep(wait)

    def _linger_wait(self) -> None:
        """Under the lock: wait until a batch is full, a flush or close asks,
        or the first queued record has waited ``LINGER``."""
        until = time.monotonic() + self._linger
        while not self._closed and not self._deadlines:
            if len(self._queue) >= self._batch_records or self._bytes >= self._batch_bytes:
                return
            left = until - time.monotonic()
            if left <= 0:
                return
            self._changed.wait(left)

    def _take(self) -> List[Item]:
        batch: List[Item] = []
        size = 0
        for item in self._queue:
            if batch and (len(batch) >= self._batch_records or size + item.size > self._batch_bytes):
                break
            batch.append(item)
            size += item.size
        return batch

    def _timeout(self) -> float:
        if not self._deadlines:
            return self._request_timeout
        left = min(self._deadlines) - time.monotonic()
        return max(MIN_REQUEST_TIMEOUT, min(self._request_timeout, left))

    def _resolve(self, batch: List[Item], outcome: Any) -> None:
        refused = len(batch) if not outcome.ok else min(len(batch), outcome.rejected)
        first_key_refusal = False
        refusal = None
        with self._lock:
            for _ in batch:
                item = self._queue.popleft()
                self._bytes -= item.size
            self._done = batch[-1].seq
            self.delivered += len(batch) - refused
            self.failed += refused
            if refused:
                self.last_error = outcome.error or f"the collector rejected {refused} of {len(batch)} records"
                if not outcome.refused_key:
                    status = None if outcome.ok else outcome.status
                    refusal = Refusal(refused, status, f"{self.where} refused {refused} record(s) for good: {self.last_error}")
            if outcome.refused_key and self.key_refusal is None:
                self.key_refusal = KeyRefusal(outcome.status, f"{self.where} {outcome.error}")
                first_key_refusal = True
            self._changed.notify_all()
            if self._bytes <= self.max_bytes // 2:
                self._warned_full = False
        if first_key_refusal:
            logger.warning("prime_otel: %s %s: %d record(s) refused for good, and every request it refuses from now on, "
                           "counted in run.failed_records without another warning", self.where, outcome.error, refused)
        elif refusal is not None:
            logger.warning("prime_otel: %s refused %d records for good (counted in run.failed_records): %s", self.where, refused, self.last_error)
            if self.on_refusal is not None:
                try:
                    self.on_refusal(refusal)
                except Exception:  # noqa: BLE001 - the worker outlives its listener
                    logger.debug("prime_otel: a refusal listener failed", exc_info=True)
        if self._down_since is not None:
            logger.warning("prime_otel: %s answers again after %.1f s", self.where, time.monotonic() - self._down_since)
            self._down_since = None

    def _note_down(self, error: str) -> None:
        self.last_error = error
        if self._down_since is None:
            self._down_since = time.monotonic()
            logger.warning(
                "prime_otel: %s did not take a request (%s); the records wait in the queue (%d queued) and are sent again until it does",
                self.where, error, self.pending(),
            )

    def _sleep(self, seconds: float) -> None:
        """Backoff that a flush or close cuts short."""
        until = time.monotonic() + seconds
        with self._lock:
            self._wake = False
            while not self._closed and not self._wake:
                left = until - time.monotonic()
                if left <= 0:
                    return
                self._changed.wait(left)


_deliveries: "weakref.WeakSet[Delivery]" = weakref.WeakSet()
_fork_hook_installed = False


def _at_fork(delivery: Delivery) -> None:
    """Every live queue is reset in a forked child (one hook for the process,
    since ``register_at_fork`` cannot be undone)."""
    global _fork_hook_installed
    _deliveries.add(delivery)
    if not _fork_hook_installed and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_reset_in_child)
        _fork_hook_installed = True


def _reset_in_child() -> None:
    for delivery in list(_deliveries):
        try:
            delivery._reset()
        except Exception:  # noqa: BLE001 - a fork hook must never raise
            pass
