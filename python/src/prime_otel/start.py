"""``init()``: a run's description turned into its resource, the collector
asked what became of the run (``_status``), and the ``Run`` that sends its
events (``run``). The rules of which run this is live here: an attached id
(``PRIME_RUN_ID``, ``RUN_ID``), a shared key (``_keys``), the rank that may
draw one.
"""

import json
import logging
import os
import uuid
from collections.abc import Mapping
from typing import Any, Dict, Optional, Sequence

from . import _auth, _keys, _otel, _status, _transport
from .errors import (
    APIError,
    ConfigurationError,
    EnvironmentResolutionError,
    ForbiddenError,
    NotFoundError,
    PaymentRequiredError,
    UnauthorizedError,
    refused_by_collector,
)
from .models import EnvironmentRef, Mode, OnError, RunKind, RunSpec, TrainingSpec, normalize_config
from .run import Run
from .values import drop_non_finite, finite, plain

logger = logging.getLogger("prime_otel")

MODE_ENV = "PRIME_RUNS_MODE"
KEY_ENV = _keys.KEY_ENV
ID_ENVS = ("PRIME_RUN_ID", "RUN_ID")
TEAM_ENV = "PRIME_TEAM_ID"
ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
LOGS_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"
STATUS_ENV = "PRIME_STATUS_ENDPOINT"
QUEUE_BYTES_ENV = "PRIME_OTEL_QUEUE_BYTES"
DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
RANK_ENVS = ("RANK", "DP_RANK", "LOCAL_RANK")
#: How long ``init()`` waits for the collector to say what became of the run.
#: The collector's queue hands a request on within its batch flush_timeout
#: (5 s by default), and the create is one platform call after that.
DEFAULT_INIT_TIMEOUT = 20.0


def init(
    *,
    kind: RunKind = "eval",
    name: Optional[str] = None,
    model: Optional[str] = None,
    environments: Optional[Sequence[Any]] = None,
    training: Optional[TrainingSpec] = None,
    config: Optional[Any] = None,
    team_id: Optional[str] = None,
    id: Optional[str] = None,
    key: Optional[str] = None,
    endpoint: Optional[str] = None,
    status_endpoint: Optional[str] = None,
    mode: Optional[Mode] = None,
    framework: Optional[str] = None,
    description: Optional[str] = None,
    tags: Optional[Sequence[str]] = None,
    summary: Optional[Mapping[str, Any]] = None,
    on_error: OnError = "warn",
    finish_timeout: Optional[float] = None,
    init_timeout: Optional[float] = None,
    queue_bytes: Optional[int] = None,
    queue_size: Optional[int] = None,
    handle_signals: bool = True,
    api_key: Optional[str] = None,
    base_url: Optional[str] = None,
    **ignored: Any,
) -> Run:
    """Start a run. ``prime_runs.init``'s arguments (its default kind is an
    evaluation, as there), plus where the collector is (``endpoint``,
    ``status_endpoint``), which run this is (``key``, shared by every process
    of the run) and how much may wait for the collector (``queue_bytes``).
    ``api_key`` (else ``PRIME_API_KEY``) is the trainer's platform key, sent as
    ``Authorization: Bearer`` to a collector on https or loopback and never in
    clear text off the host (``_auth``): a multi-tenant gateway lets the
    trainer in by it; one that holds its own key ignores it. ``base_url`` is
    accepted so calls written for the platform SDK run unchanged, and
    ignored: the collector knows where the platform is.

    Online, ``init()`` asks the collector what became of the run, for up to
    ``init_timeout`` seconds: a refused run raises here (``UnauthorizedError``,
    ``ForbiddenError``, ``ConfigurationError`` for a missing team), and
    ``run.id`` and ``run.url`` are the platform's. A collector that will not
    let the trainer in raises ``UnauthorizedError`` (401) or
    ``ForbiddenError`` (403), saying whose key it refused."""
    # Held as a Secret from here on: a debugger's or error reporter's view of
    # this frame's locals shows [REDACTED].
    api_key = _auth.Secret(api_key) if api_key is not None else None
    if kind not in ("train", "eval"):
        raise ConfigurationError(f"kind={kind!r} is not one of 'train' or 'eval'")
    if training is not None and kind != "train":
        raise ConfigurationError("training= only applies to kind='train'")
    if base_url is not None:
        logger.debug("prime_otel: base_url is the collector's setting; ignored here")
    if ignored:
        logger.debug("prime_otel: init() arguments with no meaning over OTLP, ignored: %s", ", ".join(sorted(ignored)))

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
        summary=drop_non_finite(plain(summary or {})),
    )
    resolved_mode = _mode(mode)
    rank = _rank()
    if resolved_mode == "disabled":
        return Run(spec=spec, pipeline=None, key=None, attached_id=id, rank=rank, mode=resolved_mode,
                   on_error=on_error, finish_timeout=finish_timeout, local_id=id or "disabled-" + uuid.uuid4().hex[:16])
    if id is None and kind == "train":
        id = next((os.environ[v] for v in ID_ENVS if os.environ.get(v)), None)
    if id is None:
        key = key or _keys.inherited() or None
        if key is None:
            key = _keys.new(rank)
    attributes = _resource(spec, attached_id=id, key=key)
    otlp = endpoint or os.environ.get(LOGS_ENDPOINT_ENV) or os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT
    logs_url = _otel.logs_url(otlp)
    status_url = _status.status_base(otlp, status_endpoint or os.environ.get(STATUS_ENV))
    logs_credentials, status_credentials = _auth.for_collector([logs_url, status_url], api_key=api_key, environ=os.environ)
    tls = _transport.tls_context(os.environ)
    info = _check(attributes, logs_url, status_url, logs_credentials, status_credentials, tls, kind, key, id, init_timeout)
    pipeline = _otel.open_pipeline(attributes, otlp, max_bytes=_queue_bytes(queue_bytes), max_records=queue_size,
                                   credentials=logs_credentials, tls=tls)
    run = Run(
        spec=spec,
        pipeline=pipeline,
        key=None if id else key,
        attached_id=id,
        rank=rank,
        mode=resolved_mode,
        on_error=on_error,
        finish_timeout=finish_timeout,
        info=info,
    )
    if handle_signals and rank == 0:
        run.install_signal_handlers()
    if run.url:
        logger.info("prime_otel: run %s: %s", run.id, run.url)
    return run


def _check(attributes: Dict[str, Any], logs_url: str, status_url: str, credentials: _auth.Credentials,
           status_credentials: _auth.Credentials, tls: Any, kind: str, key: Optional[str],
           run_id: Optional[str], init_timeout: Optional[float]) -> _status.RunInfo:
    """The collector's answer about the run; raises when it refused the run,
    or would not let the trainer in."""
    timeout = DEFAULT_INIT_TIMEOUT if init_timeout is None else max(0.0, float(init_timeout))
    info = _status.check(
        attributes, logs_url=logs_url, status_url=status_url, credentials=credentials,
        status_credentials=status_credentials, tls=tls, kind=kind, key=key, run_id=run_id, timeout=timeout,
    )
    who = run_id or key
    if info.state == "refused":
        raise _refusal(who, info)
    if info.state == "closed":
        raise ConfigurationError(
            f"run {who} is already closed ({info.status or 'ended'}); a run's key names one run: use a new {KEY_ENV}"
        )
    if info.state == "unchecked":
        if info.status_code in _transport.REFUSED_KEY_STATUS:
            raise refused_by_collector(info.status_code, f"run {who} was not let in: {info.error}")
        logger.warning("prime_otel: run %s was not checked (%s); its records wait in the queue until a collector takes them", who, info.error)
    elif info.state in ("unknown", "pending"):
        logger.warning(
            "prime_otel: the collector has not created run %s within %.0f s (%s); it goes on, and the collector keeps trying",
            who, timeout, "the platform has not answered yet" if info.state == "pending" else "the start event has not reached its exporter yet",
        )
    return info


def _refusal(who: Optional[str], info: _status.RunInfo) -> Exception:
    """The collector's refusal as the exception ``prime_runs`` raises for it."""
    message = f"run {who} was refused: {info.error or info.reason}"
    code = info.status_code
    if info.reason == "no_team":
        return ConfigurationError(f"{message} (set PRIME_TEAM_ID, init(team_id=), or the exporter's team_id)")
    if info.reason and info.reason.startswith("environment") or "resolving the environments" in (info.error or ""):
        return EnvironmentResolutionError(message)
    if info.reason == "unauthorized" or code == 401:
        return UnauthorizedError(message, status_code=401, code=info.reason)
    if code == 402:
        return PaymentRequiredError(message, status_code=402, code=info.reason)
    if code == 403 or info.reason == "forbidden" or (code is None and "403" in (info.error or "")):
        return ForbiddenError(message, status_code=403, code=info.reason)
    if code == 404:
        return NotFoundError(message, status_code=404, code=info.reason)
    return APIError(message, status_code=code, code=info.reason)


def _queue_bytes(value: Optional[int]) -> int:
    if value is None:
        raw = os.environ.get(QUEUE_BYTES_ENV)
        if not raw:
            return _otel._delivery.DEFAULT_MAX_BYTES
        try:
            value = int(raw)
        except ValueError:
            raise ConfigurationError(f"{QUEUE_BYTES_ENV}={raw!r} is not a number of bytes") from None
    if value <= 0:
        raise ConfigurationError(f"queue_bytes={value!r} must be a positive number of bytes")
    return value


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
        attributes["prime.run.config"] = json.dumps(finite(plain(spec.config)), separators=(",", ":"))
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
