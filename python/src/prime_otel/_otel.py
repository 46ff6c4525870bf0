"""The one module that touches the OpenTelemetry SDK.

Everything else in the package talks to a ``Pipeline``: emit an event, flush,
shut down, and the delivery counters. The unit tests replace this module with
a recording fake, so they run on a bare ``python3`` with no SDK installed; the
real SDK is proven by the recordings replayed against the built collector.

What is the SDK's and what is ours: the SDK makes the resource
(``Resource.create``: its detectors, ``service.instance.id``,
``OTEL_RESOURCE_ATTRIBUTES``, or the application's provider's resource when
that names the run) and its OTLP encoder turns the resource and the
instrumentation scope into protobuf, once, when the pipeline opens. Each
record is then a tuple on the ``_delivery`` queue, and ``_wire`` writes a
batch of them around those two messages; ``_transport`` sends it (endpoint,
headers, TLS and compression as the OTel variables say). The SDK's
``Logger.emit`` and ``BatchLogRecordProcessor`` are not on the path: the
first builds a limits object from the environment and a tree of protobuf
messages for every record (twice ``json.dumps`` of a 2 KB episode, half of it
on the trainer's thread), the second gives a batch up after about 7 s of
retries, drops the oldest records past 16,384, and reports a flush as done
after a failed export, none of which a trainer can see.

Why only logs: each ``log_metrics`` call is one ``prime.metrics`` event, so a
row is exactly one call, as in the platform SDK. A metric instrument would
aggregate per export interval and need delta temporality to avoid re-sending;
an event has neither problem.
"""

import logging
import os
import ssl
from collections.abc import Mapping
from typing import Any, Callable, Dict, Optional, Sequence

from . import _auth, _delivery, _transport, _wire

logger = logging.getLogger("prime_otel")

IDENTITY_ATTRIBUTES = ("prime.run.key", "prime.run.id")
PROTOBUF = "application/x-protobuf"
#: Never dropped by a full queue: tiny, and the run's lifecycle rests on them.
ESSENTIAL_EVENTS = ("prime.run.start", "prime.run.end")
#: What a record costs beside its body, for the queue's byte bound.
RECORD_OVERHEAD = 64


class Pipeline:
    """Records queued on a ``Delivery``, sent as OTLP by its worker."""

    def __init__(self, delivery: _delivery.Delivery) -> None:
        self.delivery = delivery
        self._put = delivery.put

    def emit(self, event_name: str, attributes: Mapping[str, Any], body: Any, timestamp_ns: int) -> bool:
        """Queue one record; ``body`` is JSON text, a mapping of numbers (sent
        as its JSON text) or None. The caller hands over ``attributes`` and a
        mapping body: they are not copied. False when the queue was full."""
        size = (len(body) if type(body) is str else size_of(body)) + RECORD_OVERHEAD
        return self._put((event_name, attributes, body, timestamp_ns), size, event_name, event_name in ESSENTIAL_EVENTS)

    def flush(self, timeout: float) -> _delivery.FlushResult:
        return self.delivery.flush(timeout)

    def shutdown(self) -> None:
        self.delivery.close()

    def watch_refusals(self, callback: Callable[[_delivery.Refusal], None]) -> None:
        """``callback`` hears, on the delivery thread, of every request the
        collector refused for good (a 401 or 403 aside: ``key_refusal``)."""
        self.delivery.on_refusal = callback

    @property
    def dropped(self) -> int:
        return self.delivery.dropped

    @property
    def failed(self) -> int:
        return self.delivery.failed

    @property
    def key_refusal(self) -> Optional[_delivery.KeyRefusal]:
        return self.delivery.key_refusal


def open_pipeline(
    resource_attributes: Dict[str, Any],
    endpoint: str,
    *,
    max_bytes: int = _delivery.DEFAULT_MAX_BYTES,
    max_records: Optional[int] = None,
    credentials: Optional[_auth.Credentials] = None,
    tls: Optional[ssl.SSLContext] = None,
) -> Pipeline:
    """A pipeline to ``endpoint``'s ``/v1/logs``, with the SDK's resource
    (nothing is installed globally). When the application's global provider
    has a resource that names a run, that resource is taken over, so the run
    is the one the application named. ``credentials`` go with every request
    (``_auth``), ``tls`` verifies an https endpoint."""
    from opentelemetry import _logs
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
    encoder = sdk_encoder(resource)

    def send(items: Sequence[_delivery.Item], timeout: float) -> _transport.Outcome:
        return transport.post(encoder.request([item.record for item in items]), PROTOBUF, timeout)

    return Pipeline(_delivery.Delivery(send, max_bytes=max_bytes, max_records=max_records, where=f"the collector at {url}"))


def sdk_encoder(resource: Any) -> _wire.Encoder:
    """An encoder whose resource and scope the SDK's own OTLP encoder wrote."""
    from opentelemetry.exporter.otlp.proto.common._internal import _encode_instrumentation_scope, _encode_resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from . import __version__

    scope = InstrumentationScope("prime_otel", __version__)
    return _wire.Encoder(
        _encode_resource(resource).SerializeToString(),
        _encode_instrumentation_scope(scope).SerializeToString(),
        resource_schema_url=resource.schema_url or "",
        scope_schema_url=scope.schema_url or "",
    )


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
