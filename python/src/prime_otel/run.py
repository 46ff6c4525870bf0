"""The ``Run`` that ``init()`` (``start``) returns: the ``prime_runs`` API, sent
as OTLP events to a collector with the prime exporter instead of to the platform.

The collector holds the API key (or, as a multi-tenant gateway, lets the
trainer in by the trainer's own, ``_auth``), creates the run, retries, queues and
closes the run out; this process only says what happened, in four events:
``prime.run.start`` (at ``init()``, so the collector creates the run and can
answer about it), ``prime.metrics`` (one per ``log_metrics`` call),
``prime.episode`` (one per episode, as JSON text made at the call) and
``prime.run.end`` (once, from rank 0 of the process that started the run).
Which run they belong to is the resource's ``prime.run.key`` (or
``prime.run.id`` to attach), shared by every rank and every forked child.

What the trainer's thread pays is a snapshot: an episode is turned into JSON
text at the call (one encoder call, as cheap as ``json.dumps``), a metrics
row into a small dict, each queued as a tuple. The rest (the OTLP encoding,
sending, retrying) happens on the delivery thread, which keeps every record
until the collector acknowledged it (``_delivery``).

Failures the trainer hears of, as ``prime_runs`` reports them: a NaN or ±Inf
inside an episode is a ``ValueError`` at the call under
``on_error="raise"`` (naming where it is; nothing of that call is sent), and
otherwise a warning and an entry in ``run.errors``, the episode sent with
``null`` there. Records the collector refused for good (a 400, a partial
success's rejections) land in ``run.errors`` as the delivery thread hears of
them, and under ``on_error="raise"`` the first is raised at the next
``flush()`` or ``finish()``, as ``prime_runs`` re-raises a sink's failure.
"""

import atexit
import logging
import math
import threading
import time
from collections.abc import Mapping
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _fork, _keys, _otel, _status
from ._process import ProcessHooks
from .errors import DeliveryError, RunFinishedError, refused_by_collector, rejected_by_collector
from .models import CONFIG_SOURCE_KEY, ConfigSource, Mode, OnError, RunKind, RunSpec, RunStatus
from .values import drop_non_finite, episode_json, plain, scalars

logger = logging.getLogger("prime_otel")

#: How long ``finish()`` waits for queued events to reach the collector. The
#: collector's queue then owns them: this is a hand-off, not the upload, so
#: it is shorter than ``prime_runs``'s 300 s (one upload's timeout there).
DEFAULT_FINISH_TIMEOUT = 30.0

EVENT_METRICS = "prime.metrics"
EVENT_EPISODE = "prime.episode"
EVENT_END = "prime.run.end"
#: The attributes of a record that has none; never changed, so shared.
_NO_ATTRIBUTES: Mapping[str, Any] = {}


class Run(ProcessHooks):
    """A live run. Nothing the collector does can raise into the trainer's loop:
    the events are queued and sent by the delivery thread."""

    def __init__(
        self,
        *,
        spec: RunSpec,
        pipeline: Optional[_otel.Pipeline],
        key: Optional[str],
        attached_id: Optional[str],
        rank: int = 0,
        mode: Mode = "online",
        on_error: OnError = "warn",
        finish_timeout: Optional[float] = None,
        info: Optional[_status.RunInfo] = None,
        local_id: Optional[str] = None,
    ) -> None:
        self._spec = spec
        self._pipeline = pipeline
        self._key = key
        self._attached_id = attached_id
        self._info = info or _status.RunInfo("unchecked")
        self._local_id = local_id
        self._rank = rank
        self._mode: Mode = mode
        self._on_error: OnError = on_error
        self._finish_timeout = DEFAULT_FINISH_TIMEOUT if finish_timeout is None else max(0.0, float(finish_timeout))
        self._status = RunStatus.RUNNING
        # Only rank 0 of the process that called init() ends the run: other
        # ranks and forked children share it and must not close it under it.
        self._owns_lifecycle = rank == 0
        self.config: Dict[str, Any] = dict(spec.config)
        self.summary: Dict[str, Any] = dict(spec.summary)
        self.errors: List[str] = []
        # Under on_error="raise", the collector's first final refusal, heard
        # on the delivery thread, waits here for the next flush() or finish().
        self._deferred_error: Optional[BaseException] = None
        self._staged: Dict[str, Any] = {}
        self._staged_step: Optional[int] = None
        self._state_lock = threading.Lock()
        self._finish_lock = threading.Lock()
        self._finishing = False
        self._finished = False
        self._atexit_hook = self._on_process_exit
        self._signal_handler = self._handle_signal
        self._previous_signal_handlers: Dict[int, Any] = {}
        _fork.register(self)
        if pipeline is not None:
            pipeline.watch_refusals(self._refused)
            _fork.register_multiprocessing(self)
        atexit.register(self._atexit_hook)

    # -------------------------------------------------------------- identity

    @property
    def id(self) -> str:
        """The platform's run id, as the collector reported it at ``init()``;
        before it has (no collector yet, or one without the status route), the
        attached id, else the run key. A disabled run's id is ``disabled-…``."""
        return self._info.id or self._attached_id or self._local_id or self._key or ""

    @property
    def key(self) -> Optional[str]:
        return self._key

    @property
    def name(self) -> Optional[str]:
        return self._spec.name

    @property
    def url(self) -> Optional[str]:
        """The run's dashboard URL (offline: its directory), as the collector
        reported it at ``init()``; ``None`` when it could not say."""
        return self._info.url

    @property
    def kind(self) -> RunKind:
        return self._spec.kind

    @property
    def attached(self) -> bool:
        return self._attached_id is not None

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def is_primary(self) -> bool:
        """Whether this process ends the run (rank 0 of the process that started it)."""
        return self._owns_lifecycle

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def status(self) -> RunStatus:
        return self._status

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def dropped_records(self) -> int:
        """Records dropped because the queue to the collector was full (its
        bound in bytes): the trainer outran the collector for that long."""
        return self._pipeline.dropped if self._pipeline is not None else 0

    @property
    def failed_records(self) -> Dict[str, int]:
        """Records the collector refused for good, by where they went (one
        place here: ``collector``), as ``prime_runs`` counts them per sink."""
        failed = self._pipeline.failed if self._pipeline is not None else 0
        return {"collector": failed} if failed else {}

    @property
    def config_source(self) -> Optional[ConfigSource]:
        raw = self.config.get(CONFIG_SOURCE_KEY)
        return ConfigSource.from_mapping(raw) if isinstance(raw, Mapping) else None

    def __repr__(self) -> str:
        return f"<Run id={self.id!r} kind={self.kind!r} mode={self._mode!r} status={self._status.value}>"

    # ------------------------------------------------------------------- log

    def log_metrics(self, values: Mapping[str, Any], *, step: Optional[int] = None, commit: bool = True) -> None:
        """One row of the run's metrics: ``step`` (else ``values["step"]``), or,
        with no step at all, a row keyed by its time, as prime-rl logs
        inference metrics. Nested mappings flatten with ``/``; numpy and torch
        scalars become numbers; NaN and ±Inf are dropped and named in one
        warning. The values also land in ``summary``, last value wins, as in
        ``prime_runs``; ``commit=False`` stages them for the next committed
        call's row. An evaluation has no metric rows: there the values only
        reach ``summary``, which ``finish()`` sends."""
        self._require_live("log_metrics")
        if self._pipeline is None:
            return
        values = dict(values)
        stamp = plain(values.pop("_timestamp", None))
        own_step = values.pop("step", None)
        step = own_step if own_step is not None else step
        if step is not None and type(step) is not int:
            step = _step(step)
        # kept is this call's own dict of plain numbers: the queued record's
        # body, which the delivery thread writes as JSON text.
        kept, non_finite, not_numbers = scalars(values)
        if non_finite or not_numbers:
            where = f"step {step}" if step is not None else "a time-keyed row"
            if non_finite:
                logger.warning("prime_otel: dropped non-finite metric values at %s: %s", where, ", ".join(non_finite))
            if not_numbers:
                logger.warning("prime_otel: dropped metric values that are not numbers at %s: %s", where, ", ".join(not_numbers))
        with self._state_lock:
            self.summary.update(kept)
            if not commit:
                self._staged.update(kept)
                if step is not None:
                    self._staged_step = step
                return
            if self._staged or self._staged_step is not None:
                kept = {**self._staged, **kept}
                step = step if step is not None else self._staged_step
                self._staged, self._staged_step = {}, None
        if not kept or self._spec.kind == "eval":
            return
        when = int(stamp * 1e9) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and math.isfinite(stamp) else time.time_ns()
        self._pipeline.emit(EVENT_METRICS, _NO_ATTRIBUTES if step is None else {"prime.step": step}, kept, when)

    log = log_metrics

    def log_episodes(self, episodes: Iterable[Any], *, step: Optional[int] = None, line_format: Optional[str] = None) -> None:
        """One ``prime.episode`` event per episode: a verifiers ``Episode`` or
        ``Trace`` (through ``to_record()``) or a plain mapping, as JSON text
        made now. ``step`` is the step the episodes were dispatched at; a
        native document carries its own in ``run.work.step``. numpy and torch
        values become numbers and lists. A NaN or ±Inf raises ``ValueError``
        under ``on_error="raise"``, naming where it is, and nothing of the
        call is sent; otherwise it is sent as null, with a warning and an
        entry in ``run.errors``."""
        self._require_live("log_episodes")
        pipeline = self._pipeline
        if pipeline is None:
            return
        # This runs once per episode in many trainers: the common types (a
        # list of dicts, an int step) are told by type() before the general
        # checks, which cost more than the rest of the call.
        if type(episodes) is not list and (isinstance(episodes, Mapping) or hasattr(episodes, "to_record")):
            episodes = [episodes]
        if step is None or self._spec.kind != "train":
            attributes = _NO_ATTRIBUTES
        else:
            attributes = {"prime.work.step": step if type(step) is int else _step(step)}
        # Every episode is made text before any is queued, so a call that
        # raises sends none of its episodes.
        texts = []
        for i, episode in enumerate(episodes):
            if type(episode) is dict:
                record = episode
            else:
                record = episode.to_record() if hasattr(episode, "to_record") else episode
                if not isinstance(record, Mapping):
                    logger.warning("prime_otel: skipped an episode of type %s: it has no to_record() and is not a mapping", type(episode).__name__)
                    continue
            text, non_finite = episode_json(record)
            if non_finite:
                self._non_finite_episode(i, non_finite)
            texts.append(text)
        emit, now = pipeline.emit, time.time_ns
        for text in texts:
            emit(EVENT_EPISODE, attributes, text, now())

    log_traces = log_episodes
    log_samples = log_episodes

    def update_summary(self, values: Mapping[str, Any]) -> None:
        """Merge run-level outputs into ``summary``, sent with ``finish()``;
        NaN and ±Inf are left out, as ``prime_runs`` leaves them."""
        with self._state_lock:
            self._require_live("update_summary")
            self.summary.update(drop_non_finite(plain(values)))

    def update_config(self, values: Mapping[str, Any]) -> None:
        """Merge into ``run.config``. The collector was told the config at
        ``init()``, with the run's create; a later change stays in this process."""
        self._require_live("update_config")
        self.config.update(plain(values))

    def flush(self, timeout: Optional[float] = 30.0) -> bool:
        """Wait until every event logged so far reached the collector, or
        ``timeout`` seconds passed. False, with a warning (``DeliveryError``
        under ``on_error="raise"``) naming what is still queued, when not."""
        if self._pipeline is None:
            return True
        budget = 30.0 if timeout is None else max(0.0, float(timeout))
        result = self._pipeline.flush(budget)
        self._raise_key_refusal("flush")
        self._raise_deferred()
        if not result.delivered:
            self._undelivered("flush", result, budget)
        return result.delivered

    # ---------------------------------------------------------------- finish

    def finish(
        self,
        summary: Optional[Mapping[str, Any]] = None,
        *,
        status: Union[RunStatus, str] = RunStatus.COMPLETED,
        error: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> None:
        """Send what is queued and end the run (rank 0 of the starting process
        only), within ``timeout`` (else ``finish_timeout``) seconds. What did
        not reach the collector by then is named in a warning, or raised as
        ``DeliveryError`` under ``on_error="raise"``; a collector that refused
        the trainer's key raises ``UnauthorizedError`` (or ``ForbiddenError``)
        there instead. Idempotent: the first caller's status counts."""
        with self._finish_lock:
            if self._finished:
                return
            resolved = status if isinstance(status, RunStatus) else RunStatus(status)
            if not resolved.is_terminal():
                raise ValueError(f"finish() requires a terminal status, got {resolved.value!r}")
            with self._state_lock:
                self._finishing = True
            try:
                self._finish_once(summary, resolved, error, timeout)
            finally:
                with self._state_lock:
                    self._finishing = False
                    self._finished = True

    def _finish_once(self, summary: Optional[Mapping[str, Any]], status: RunStatus, error: Optional[str], timeout: Optional[float]) -> None:
        if summary:
            self.summary.update(drop_non_finite(plain(summary)))
        self._status = status
        atexit.unregister(self._atexit_hook)
        self._restore_signal_handlers()
        if self._owns_lifecycle and self._key:
            _keys.retract(self._key)
        pipeline = self._pipeline
        if pipeline is None:
            return
        budget = self._finish_timeout if timeout is None else max(0.0, float(timeout))
        if self._owns_lifecycle:
            if self.kind == "eval" and self.summary:
                values, non_finite, not_numbers = scalars(self.summary)
                if non_finite or not_numbers:
                    logger.warning("prime_otel: summary values left out (not finite numbers): %s", ", ".join(non_finite + not_numbers))
                if values:
                    self._emit(EVENT_METRICS, {}, values, time.time_ns())
            # The queue is sent in order, one request at a time: the end
            # reaches the collector after every event logged before it.
            attributes: Dict[str, Any] = {"prime.run.status": status.value}
            if status is not RunStatus.COMPLETED:
                attributes["prime.run.error"] = error or (self.errors[0] if self.errors else status.value)
            self._emit(EVENT_END, attributes, None, time.time_ns())
        delivery = getattr(pipeline, "delivery", None)
        pending = delivery.pending() if delivery is not None else 0
        if pending and budget >= 1:
            # Said as a warning when the collector is not answering: the wait is then the whole budget.
            level = logging.WARNING if delivery.down else logging.INFO
            logger.log(level, "prime_otel: run %s: waiting up to %.0f s for the collector to take %d queued records", self.id, budget, pending)
        result = pipeline.flush(budget)
        pipeline.shutdown()
        self._raise_key_refusal("finish")
        self._raise_deferred()
        if not result.delivered:
            self._undelivered("finish", result, budget)
        elif self.dropped_records or self.failed_records:
            logger.warning(
                "prime_otel: run %s finished with %d dropped record(s) (the queue was full) and %d the collector refused",
                self.id, self.dropped_records, sum(self.failed_records.values()),
            )

    def _undelivered(self, what: str, result: Any, budget: float) -> None:
        kinds = ", ".join(_kind(k, n) for k, n in sorted(result.by_kind.items()))
        message = (
            f"run {self.id}: {result.undelivered} records did not reach the collector within {budget:g} s of {what}()"
            f" ({kinds}); last error: {result.last_error or 'none'}"
        )
        self.errors.append(message)
        if self._on_error == "raise":
            raise DeliveryError(message, undelivered=result.undelivered, dropped=self.dropped_records, failed=sum(self.failed_records.values()))
        logger.warning("prime_otel: %s", message)

    def _raise_key_refusal(self, what: str) -> None:
        """A collector that would not let the trainer in: every record it
        refused is lost, so ``on_error="raise"`` raises it, as ``init()``
        would have (the message names whose key, never the key)."""
        refusal = self._pipeline.key_refusal if self._pipeline is not None else None
        if refusal is None:
            return
        failed = sum(self.failed_records.values())
        message = f"run {self.id}: {refusal.message}; {failed} records were refused for good by the time of {what}()"
        if message not in self.errors:
            self.errors.append(message)
        if self._on_error == "raise":
            raise refused_by_collector(refusal.status, message)

    def _non_finite_episode(self, index: int, paths: List[str]) -> None:
        """A NaN or ±Inf in an episode: JSON has no words for it. Raised at
        the call under ``on_error="raise"``, as ``prime_runs`` fails its
        upload on it (where, here, the collector would store null)."""
        shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        message = f"run {self.id}: episode {index} of a log_episodes() call holds NaN or Infinity at {shown}"
        if self._on_error == "raise":
            message += "; JSON has no words for them: nothing of the call was sent"
            self.errors.append(message)
            raise ValueError(message)
        message += "; sent as null"
        self.errors.append(message)
        logger.warning("prime_otel: %s", message)

    def _refused(self, refusal: Any) -> None:
        """The delivery thread's word of records the collector refused for
        good (a ``_delivery.Refusal``): kept in ``errors``; under
        ``on_error="raise"`` the first is held for the next flush or finish."""
        message = f"run {self.id}: {refusal.message}"
        self.errors.append(message)
        if self._on_error == "raise" and self._deferred_error is None:
            self._deferred_error = rejected_by_collector(refusal.status, message)

    def _raise_deferred(self) -> None:
        """Raise the first held refusal, once."""
        error, self._deferred_error = self._deferred_error, None
        if error is not None:
            raise error

    def fail(self, error: Union[str, BaseException], *, timeout: Optional[float] = None) -> None:
        self.finish(status=RunStatus.FAILED, error=_describe(error), timeout=timeout)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> bool:
        if exc_type is None:
            self.finish()
            return False
        if isinstance(exc, KeyboardInterrupt):
            # As prime_runs: an interrupt is a decision, not a fault, and is
            # reported with the runs that stopped from outside their control flow.
            status, error = RunStatus.CRASHED, "interrupted"
        else:
            status, error = RunStatus.FAILED, _describe(exc)
        try:
            self.finish(status=status, error=error)
        except Exception as finish_error:  # the trainer's exception is the one to see
            logger.warning("prime_otel: finishing run %s after %s also failed: %s", self.id, exc_type.__name__, finish_error)
        return False

    # ------------------------------------------------------------- internals

    def _require_live(self, operation: str) -> None:
        if self._finishing or self._finished:
            raise RunFinishedError(f"{operation}() was called on run {self.id}, which is already finished; start a new one")

    def _emit(self, event: str, attributes: Mapping[str, Any], body: Any, when_ns: int) -> None:
        assert self._pipeline is not None
        self._pipeline.emit(event, attributes, body, when_ns)


def _kind(event: str, n: int) -> str:
    """``n`` records of one event, as a message names them."""
    if event in (EVENT_END, "prime.run.start"):  # one a run
        return "the end event" if event == EVENT_END else "the start event"
    return f"{n} " + {EVENT_METRICS: "metric rows", EVENT_EPISODE: "episodes"}.get(event, event or "other records")


def _step(value: Any) -> Optional[int]:
    """A step as an int: numpy ints and integral floats are taken, anything
    else is a caller's mistake, said at the call."""
    if value is None:
        return None
    value = plain(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"step must be an int, got {value!r}")
    return value


def _describe(error: Union[str, BaseException]) -> str:
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)
