"""The one module that touches the OpenTelemetry SDK.

Everything else in the package talks to a ``Pipeline``: emit an event, flush,
shut down, and the delivery counters. The unit tests replace this module with
a recording fake, so they run on a bare ``python3`` with no SDK installed; the
real SDK is proven by the recordings replayed against the built collector.

What is the SDK's and what is ours: the SDK's ``LoggerProvider`` makes the
records (resource, scope, timestamps, event names) and its OTLP encoder turns
a batch into the protobuf request. In between, in place of the SDK's
``BatchLogRecordProcessor`` and ``OTLPLogExporter``, a processor of ours hands
each record to ``_delivery`` and ``_transport``: the SDK's pair gives a batch up
after about 7 s of retries, drops the oldest records past 16,384, and reports
a flush as done after a failed export, none of which a trainer can see.

Why only logs: each ``log_metrics`` call is one ``prime.metrics`` event, so a
row is exactly one call, as in the platform SDK. A metric instrument would
aggregate per export interval and need delta temporality to avoid re-sending;
an event has neither problem.
"""

import copy
import logging
import os
import ssl
from collections.abc import Mapping
from typing import Any, Dict, Optional, Sequence

from . import _auth, _delivery, _transport

logger = logging.getLogger("prime_otel")

IDENTITY_ATTRIBUTES = ("prime.run.key", "prime.run.id")
PROTOBUF = "application/x-protobuf"
#: Never dropped by a full queue: tiny, and the run's lifecycle rests on them.
ESSENTIAL_EVENTS = ("prime.run.start", "prime.run.end")


class Pipeline:
    """An SDK logger whose records go through a ``Delivery`` queue."""

    def __init__(self, provider: Any, delivery: _delivery.Delivery) -> None:
        from . import __version__

        self._provider = provider
        self.delivery = delivery
        self._logger = provider.get_logger("prime_otel", __version__)

    def emit(self, event_name: str, attributes: Mapping[str, Any], body: Any, timestamp_ns: int) -> None:
        self._logger.emit(event_name=event_name, attributes=dict(attributes) or None, body=body, timestamp=timestamp_ns)

    def flush(self, timeout: float) -> _delivery.FlushResult:
        return self.delivery.flush(timeout)

    def shutdown(self) -> None:
        self.delivery.close()

    @property
    def dropped(self) -> int:
        return self.delivery.dropped

    @property
    def failed(self) -> int:
        return self.delivery.failed

    @property
    def key_refusal(self) -> Optional[_delivery.KeyRefusal]:
        return self.delivery.key_refusal


class _Processor:
    """The SDK's processor interface over a ``Delivery``. A record is copied
    as the SDK's own batch processor copies it (the context dropped), sized
    by its body, and queued."""

    def __init__(self, delivery: _delivery.Delivery) -> None:
        from opentelemetry.context import Context
        from opentelemetry.sdk._logs import ReadableLogRecord

        self._delivery = delivery
        self._readable = ReadableLogRecord
        self._context = Context

    def on_emit(self, log_record: Any) -> None:
        record = copy.copy(log_record.log_record)
        record.context = self._context()
        readable = self._readable(
            log_record=record,
            resource=log_record.resource,
            instrumentation_scope=log_record.instrumentation_scope,
            limits=log_record.limits,
        )
        kind = record.event_name or ""
        self._delivery.put(readable, size_of(record.body) + 64, kind, essential=kind in ESSENTIAL_EVENTS)

    def shutdown(self) -> None:
        self._delivery.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._delivery.flush(timeout_millis / 1000).delivered


def open_pipeline(
    resource_attributes: Dict[str, Any],
    endpoint: str,
    *,
    max_bytes: int = _delivery.DEFAULT_MAX_BYTES,
    max_records: Optional[int] = None,
    credentials: Optional[_auth.Credentials] = None,
    tls: Optional[ssl.SSLContext] = None,
) -> Pipeline:
    """A provider of our own, not installed globally, sending to
    ``endpoint``'s ``/v1/logs``. When the application's global provider has a
    resource that names a run, that resource is taken over, so the run is the
    one the application named. ``credentials`` go with every request
    (``_auth``), ``tls`` verifies an https endpoint."""
    from opentelemetry import _logs
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create(resource_attributes)
    app_resource = getattr(_logs.get_logger_provider(), "resource", None)
    if app_resource is not None and any((app_resource.attributes or {}).get(n) for n in IDENTITY_ATTRIBUTES):
        logger.info("prime_otel: the application's LoggerProvider names the run; its resource is used")
        resource = resource.merge(app_resource)

    url = logs_url(endpoint)
    transport = _transport.Transport(
        url,
        credentials,
        tls=tls,
        compression=(os.environ.get("OTEL_EXPORTER_OTLP_LOGS_COMPRESSION") or os.environ.get("OTEL_EXPORTER_OTLP_COMPRESSION") or "none").strip().lower(),
    )

    def send(items: Sequence[_delivery.Item], timeout: float) -> _transport.Outcome:
        body = encode_logs([item.record for item in items]).SerializeToString()
        return transport.post(body, PROTOBUF, timeout)

    delivery = _delivery.Delivery(send, max_bytes=max_bytes, max_records=max_records, where=f"the collector at {url}")
    provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    processor = _Processor(delivery)
    provider.add_log_record_processor(processor)
    return Pipeline(provider, delivery)


def logs_url(endpoint: str) -> str:
    """``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` is the whole URL; any other
    endpoint is a base that gets ``/v1/logs``, as the SDK does."""
    signal = os.environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")
    if signal and endpoint == signal:
        return signal
    return endpoint.rstrip("/") + "/v1/logs"


def size_of(value: Any) -> int:
    """About how many bytes ``value`` takes on the wire."""
    if isinstance(value, str):
        return (len(value) if value.isascii() else len(value.encode("utf-8"))) + 8
    if isinstance(value, bytes):
        return len(value) + 8
    if isinstance(value, Mapping):
        return 16 + sum(len(str(k)) + 8 + size_of(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 8 + sum(size_of(v) + 4 for v in value)
    return 16
