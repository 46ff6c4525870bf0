"""``init()`` and the ``Run`` it returns: the ``prime_runs`` API, sent as OTLP
events to a collector with the prime exporter instead of to the platform.

The collector holds the API key, creates the run, retries, queues and
closes the run out; this process only says what happened, in three events:
``prime.metrics`` (one per ``log_metrics`` call), ``prime.episode`` (one per
episode) and ``prime.run.end`` (once, from rank 0 of the process tree that
started the run). Which run they belong to is the resource's ``prime.run.key``
(or ``prime.run.id`` to attach), shared by every rank and every forked child.
"""

import asyncio
import atexit
import json
import logging
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import _fork, _otel
from .errors import ConfigurationError, PrimeRunsError, RunFinishedError
from .models import (
    CONFIG_SOURCE_KEY,
    ConfigSource,
    EnvironmentRef,
    Mode,
    OnError,
    RunKind,
    RunSpec,
    RunStatus,
    TrainingSpec,
    normalize_config,
)
from .values import plain, scalars

logger = logging.getLogger("prime_otel")

MODE_ENV = "PRIME_RUNS_MODE"
KEY_ENV = "PRIME_RUN_KEY"
ID_ENVS = ("PRIME_RUN_ID", "RUN_ID")
TEAM_ENV = "PRIME_TEAM_ID"
ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
RANK_ENVS = ("RANK", "DP_RANK", "LOCAL_RANK")
#: How long ``finish()`` waits for queued events to reach the collector. The
#: collector's queue then owns them: this is a hand-off, not the upload.
DEFAULT_FINISH_TIMEOUT = 30.0

EVENT_METRICS = "prime.metrics"
EVENT_EPISODE = "prime.episode"
EVENT_END = "prime.run.end"


class Run:
    """A live run. Nothing the collector does can raise into the trainer's loop:
    the events are queued and sent by the SDK's exporter thread."""

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
    ) -> None:
        self._spec = spec
        self._pipeline = pipeline
        self._key = key
        self._attached_id = attached_id
        self._rank = rank
        self._mode: Mode = mode
        self._on_error: OnError = on_error
        self._finish_timeout = DEFAULT_FINISH_TIMEOUT if finish_timeout is None else max(0.0, float(finish_timeout))
        self._status = RunStatus.RUNNING
        # Only rank 0 of the process that called init() ends the run: other
        # ranks and forked children share it and must not close it under it.
        self._owns_lifecycle = rank == 0
        self.config: Dict[str, Any] = dict(spec.config)
        self.summary: Dict[str, Any] = {}
        self.errors: List[str] = []
        self._state_lock = threading.Lock()
        self._finish_lock = threading.Lock()
        self._finishing = False
        self._finished = False
        self._atexit_hook = self._on_process_exit
        _fork.register(self)
        atexit.register(self._atexit_hook)

    # -------------------------------------------------------------- identity

    @property
    def id(self) -> str:
        """The attached platform run id, else the run key: the identity the
        collector maps to the platform run it creates."""
        return self._attached_id or self._key or ""

    @property
    def key(self) -> Optional[str]:
        return self._key

    @property
    def name(self) -> Optional[str]:
        return self._spec.name

    @property
    def url(self) -> Optional[str]:
        """Always ``None``: the collector creates the run and logs its dashboard URL."""
        return None

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
    def mode(self) -> Mode:
        return self._mode

    @property
    def status(self) -> RunStatus:
        return self._status

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def config_source(self) -> Optional[ConfigSource]:
        raw = self.config.get(CONFIG_SOURCE_KEY)
        if isinstance(raw, Mapping) and isinstance(raw.get("text"), str):
            return ConfigSource(text=raw["text"], format=str(raw.get("format") or "toml"), filename=raw.get("filename"))
        return None

    def __repr__(self) -> str:
        return f"<Run id={self.id!r} kind={self.kind} mode={self._mode!r} status={self._status.value}>"

    # ------------------------------------------------------------------- log

    def log_metrics(self, values: Mapping[str, Any], *, step: Optional[int] = None) -> None:
        """One row of the run's metrics: ``step`` (else ``values["step"]``), or,
        with no step at all, a row keyed by its time, as prime-rl logs
        inference metrics. Nested mappings flatten with ``/``; numpy and torch
        scalars become numbers; NaN and ±Inf are dropped and named in one
        warning. An evaluation has no metric rows: there it is a no-op, as
        in the platform SDK (use ``update_summary`` or ``finish(summary=)``)."""
        self._require_live("log_metrics")
        if self._pipeline is None or self.kind == "eval":
            return
        values = dict(values)
        stamp = plain(values.pop("_timestamp", None))
        own_step = values.pop("step", None)
        step = _step(own_step if own_step is not None else step)
        kept, non_finite, not_numbers = scalars(values)
        where = f"step {step}" if step is not None else "a time-keyed row"
        if non_finite:
            logger.warning("prime_otel: dropped non-finite metric values at %s: %s", where, ", ".join(non_finite))
        if not_numbers:
            logger.warning("prime_otel: dropped metric values that are not numbers at %s: %s", where, ", ".join(not_numbers))
        if not kept:
            return
        when = int(stamp * 1e9) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and math.isfinite(stamp) else time.time_ns()
        attributes = {} if step is None else {"prime.step": step}
        self._emit(EVENT_METRICS, attributes, kept, when)

    log = log_metrics

    def log_episodes(self, episodes: Iterable[Any], *, step: Optional[int] = None) -> None:
        """One ``prime.episode`` event per episode: a verifiers ``Episode`` or
        ``Trace`` (through ``to_record()``) or a plain mapping. ``step`` is the
        step the episodes were dispatched at; a native document carries its
        own in ``run.work.step``. Every value is made plain first, so one
        numpy value can never drop an export."""
        self._require_live("log_episodes")
        if self._pipeline is None:
            return
        if isinstance(episodes, Mapping) or hasattr(episodes, "to_record"):
            episodes = [episodes]
        step = _step(step) if self.kind == "train" else None
        attributes = {} if step is None else {"prime.work.step": step}
        for episode in episodes:
            record = episode.to_record() if hasattr(episode, "to_record") else episode
            if not isinstance(record, Mapping):
                logger.warning("prime_otel: skipped an episode of type %s: it has no to_record() and is not a mapping", type(episode).__name__)
                continue
            self._emit(EVENT_EPISODE, attributes, plain(record), time.time_ns())

    log_traces = log_episodes
    log_samples = log_episodes

    def update_summary(self, values: Mapping[str, Any]) -> None:
        """Merge run-level outputs into ``summary``, sent with ``finish()``."""
        with self._state_lock:
            self._require_live("update_summary")
            self.summary.update(plain(values))

    def flush(self, timeout: Optional[float] = 30.0) -> bool:
        """Block until queued events have reached the collector."""
        if self._pipeline is None:
            return True
        return self._pipeline.flush(30.0 if timeout is None else timeout)

    # ---------------------------------------------------------------- finish

    def finish(
        self,
        summary: Optional[Mapping[str, Any]] = None,
        *,
        status: Union[RunStatus, str] = RunStatus.COMPLETED,
        error: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> None:
        """Send what is queued, then end the run (rank 0 of the starting process
        only). Idempotent: the first caller's status counts."""
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
            self.summary.update(plain(summary))
        self._status = status
        atexit.unregister(self._atexit_hook)
        pipeline = self._pipeline
        if pipeline is None:
            return
        budget = self._finish_timeout if timeout is None else max(0.0, float(timeout))
        deadline = time.monotonic() + budget
        if self._owns_lifecycle:
            if self.kind == "eval" and self.summary:
                values, non_finite, not_numbers = scalars(self.summary)
                if non_finite or not_numbers:
                    logger.warning("prime_otel: summary values left out (not finite numbers): %s", ", ".join(non_finite + not_numbers))
                if values:
                    self._emit(EVENT_METRICS, {}, values, time.time_ns())
            # Every event before the end: the collector closes the run out
            # a grace period after the end event, and anything later is refused.
            drained = pipeline.flush(max(0.0, deadline - time.monotonic()))
            attributes: Dict[str, Any] = {"prime.run.status": status.value}
            if status is not RunStatus.COMPLETED:
                attributes["prime.run.error"] = error or (self.errors[0] if self.errors else status.value)
            self._emit(EVENT_END, attributes, None, time.time_ns())
        drained = pipeline.flush(max(0.0, deadline - time.monotonic()))
        pipeline.shutdown()
        if not drained:
            message = f"run {self.id}: events did not reach the collector within {budget}s"
            self.errors.append(message)
            if self._on_error == "raise":
                raise PrimeRunsError(message)
            logger.warning("prime_otel: %s", message)

    def fail(self, error: Union[str, BaseException], *, timeout: Optional[float] = None) -> None:
        self.finish(status=RunStatus.FAILED, error=_describe(error), timeout=timeout)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> bool:
        if exc_type is None:
            self.finish()
            return False
        if isinstance(exc, (KeyboardInterrupt, asyncio.CancelledError)):
            status, error = RunStatus.CANCELLED, "interrupted"
        else:
            status, error = RunStatus.FAILED, _describe(exc)
        try:
            self.finish(status=status, error=error)
        except Exception as finish_error:  # the trainer's exception is the one to see
            logger.warning("prime_otel: finishing run %s after %s also failed: %s", self.id, exc_type.__name__, finish_error)
        return False

    # ------------------------------------------------------------- internals

    def reset_after_fork(self) -> None:
        """A forked child keeps logging into the run but never ends it."""
        self._state_lock = threading.Lock()
        self._finish_lock = threading.Lock()
        self._finishing = False
        self._owns_lifecycle = False

    def _on_process_exit(self) -> None:
        if self._finished:
            return
        if self._owns_lifecycle:
            logger.warning("prime_otel: run %s was never finished; reporting it as crashed", self.id)
        try:
            self.finish(status=RunStatus.CRASHED, error="process exited without finishing the run")
        except Exception as exc:  # noqa: BLE001 - never a traceback from atexit
            logger.warning("prime_otel: reporting the crash of run %s failed: %s", self.id, exc)

    def _require_live(self, operation: str) -> None:
        if self._finishing or self._finished:
            raise RunFinishedError(f"{operation}() was called on run {self.id}, which is already finished; start a new one")

    def _emit(self, event: str, attributes: Mapping[str, Any], body: Any, when_ns: int) -> None:
        assert self._pipeline is not None
        self._pipeline.emit(event, attributes, body, when_ns)


def init(
    *,
    kind: RunKind = "train",
    name: Optional[str] = None,
    model: Optional[str] = None,
    environments: Optional[Sequence[Any]] = None,
    training: Optional[TrainingSpec] = None,
    config: Optional[Any] = None,
    team_id: Optional[str] = None,
    id: Optional[str] = None,
    key: Optional[str] = None,
    endpoint: Optional[str] = None,
    mode: Optional[Mode] = None,
    framework: Optional[str] = None,
    description: Optional[str] = None,
    tags: Optional[Sequence[str]] = None,
    on_error: OnError = "warn",
    finish_timeout: Optional[float] = None,
    api_key: Optional[str] = None,
    base_url: Optional[str] = None,
) -> Run:
    """Start a run. ``prime_runs.init``'s arguments, plus where the collector is
    (``endpoint``) and which run this is (``key``, shared by every process of
    the run). ``api_key`` and ``base_url`` are accepted so calls written for
    the platform SDK run unchanged, and ignored: the collector holds the key."""
    if kind not in ("train", "eval"):
        raise ConfigurationError(f"kind={kind!r} is not one of 'train' or 'eval'")
    if training is not None and kind != "train":
        raise ConfigurationError("training= only applies to kind='train'")
    if api_key is not None or base_url is not None:
        logger.debug("prime_otel: api_key and base_url are the collector's settings; ignored here")

    spec = RunSpec(
        kind=kind,
        name=name,
        model=model,
        environments=[EnvironmentRef.coerce(e) for e in (environments or [])],
        training=training,
        config=normalize_config(config),
        team_id=team_id if team_id is not None else (os.environ.get(TEAM_ENV) or None),
        framework=framework,
        description=description,
        tags=list(tags or []),
    )
    resolved_mode = _mode(mode)
    rank = _rank()
    if id is None and kind == "train":
        id = next((os.environ[v] for v in ID_ENVS if os.environ.get(v)), None)
    if id is None:
        key = key or os.environ.get(KEY_ENV) or None
        if key is None:
            key = _new_key(rank)
    attributes = _resource(spec, attached_id=id, key=key)
    pipeline = None
    if resolved_mode == "online":
        pipeline = _otel.open_pipeline(attributes, endpoint or os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT)
    return Run(
        spec=spec,
        pipeline=pipeline,
        key=None if id else key,
        attached_id=id,
        rank=rank,
        mode=resolved_mode,
        on_error=on_error,
        finish_timeout=finish_timeout,
    )


def _mode(mode: Optional[str]) -> Mode:
    if mode is None:
        mode = (os.environ.get(MODE_ENV) or "online").strip().lower()
    if mode not in ("online", "disabled"):
        raise ConfigurationError(f"mode={mode!r} is not one of 'online' or 'disabled' (from the argument or {MODE_ENV})")
    return mode  # type: ignore[return-value]


def _rank() -> int:
    for name in RANK_ENVS:
        raw = os.environ.get(name)
        if raw:
            try:
                return int(raw)
            except ValueError:
                raise ConfigurationError(f"{name}={raw!r} is not an integer rank") from None
    return 0


def _new_key(rank: int) -> str:
    """A fresh key for a run nobody named. Only rank 0 may draw one: ranks
    that each drew their own would become runs of their own."""
    if rank != 0:
        raise ConfigurationError(
            f"rank {rank} has no run key: set {KEY_ENV} (the same in every rank) in the launcher's environment"
        )
    key = "run-" + uuid.uuid4().hex[:16]
    # Processes this one starts from now on (ranks, workers) share the key.
    os.environ[KEY_ENV] = key
    print(f"prime_otel: run key {key} (set {KEY_ENV}={key} to send more data to this run)", file=sys.stderr)
    return key


def _resource(spec: RunSpec, *, attached_id: Optional[str], key: Optional[str]) -> Dict[str, Any]:
    """The resource attributes that tell the collector which run this is and,
    for a run it creates, what to create (docs/telemetry.md §1)."""
    attributes: Dict[str, Any] = {"prime.run.kind": spec.kind}
    if attached_id:
        attributes["prime.run.id"] = attached_id
    else:
        attributes["prime.run.key"] = key
    optional = {
        "prime.run.name": spec.name,
        "prime.run.model": spec.model,
        "prime.run.team_id": spec.team_id,
    }
    attributes.update({k: v for k, v in optional.items() if v})
    if spec.environments:
        attributes["prime.run.environments"] = [e.wire() for e in spec.environments]
    if spec.config:
        # A resource attribute cannot be a map in the Python SDK: JSON text is taken.
        attributes["prime.run.config"] = json.dumps(_finite(plain(spec.config)), separators=(",", ":"))
    if spec.training is not None:
        attributes.update(spec.training.attributes())
    if spec.kind == "eval":
        if spec.tags:
            attributes["prime.eval.tags"] = [str(t) for t in spec.tags]
        if spec.framework:
            attributes["prime.eval.framework"] = spec.framework
        if spec.description:
            attributes["prime.eval.description"] = spec.description
    return attributes


def _finite(value: Any) -> Any:
    """JSON has no NaN: a non-finite number in a config becomes null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


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
