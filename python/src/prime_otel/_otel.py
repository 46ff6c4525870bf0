"""The one module that touches the OpenTelemetry SDK.

Everything else in the package talks to a ``Pipeline``: emit an event, flush,
shut down. The unit tests replace this module with a recording fake, so they
run on a bare ``python3`` with no SDK installed; the real SDK is proven by the
recordings replayed against the built collector.

Why only logs: each ``log_metrics`` call is one ``prime.metrics`` event, so a
row is exactly one call, as in the platform SDK. A metric instrument would
aggregate per export interval and need delta temporality to avoid re-sending;
an event has neither problem, and one provider means one flush before the end.
"""

import logging
from typing import Any, Dict, Mapping, Sequence

logger = logging.getLogger("prime_otel")

#: The collector's OTLP/HTTP receiver refuses a request body over 20 MiB by
#: default (confighttp max_request_body_size). One export is kept under half of
#: that, measured on the values sent, so protobuf framing never tips it over.
MAX_EXPORT_BYTES = 8 * 1024 * 1024
#: Records waiting for export; past it the SDK drops new ones with a warning.
MAX_QUEUE = 16384
IDENTITY_ATTRIBUTES = ("prime.run.key", "prime.run.id")


class Pipeline:
    """An SDK logger and the provider behind it. ``owned`` is False for the
    application's own provider, which is flushed but never shut down here."""

    def __init__(self, provider: Any, owned: bool) -> None:
        from . import __version__

        self._provider = provider
        self.owned = owned
        self._logger = provider.get_logger("prime_otel", __version__)

    def emit(self, event_name: str, attributes: Mapping[str, Any], body: Any, timestamp_ns: int) -> None:
        self._logger.emit(
            event_name=event_name,
            attributes=dict(attributes) or None,
            body=body,
            timestamp=timestamp_ns,
        )

    def flush(self, timeout: float) -> bool:
        return bool(self._provider.force_flush(timeout_millis=int(max(0.0, timeout) * 1000)))

    def shutdown(self) -> None:
        if self.owned:
            self._provider.shutdown()


def open_pipeline(resource_attributes: Dict[str, Any], endpoint: str) -> Pipeline:
    """The application's global SDK LoggerProvider when its resource already
    names a run (it then decides where data goes); otherwise a provider of our
    own, not installed globally, sending to ``endpoint``."""
    from opentelemetry import _logs

    app = _logs.get_logger_provider()
    resource = getattr(app, "resource", None)
    app_attributes = getattr(resource, "attributes", None) or {}
    if any(app_attributes.get(name) for name in IDENTITY_ATTRIBUTES):
        logger.info("prime_otel: using the application's LoggerProvider, whose resource names the run")
        return Pipeline(app, owned=False)

    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create(resource_attributes), shutdown_on_exit=False)
    exporter = SizedExporter(OTLPLogExporter(endpoint=endpoint.rstrip("/") + "/v1/logs"))
    provider.add_log_record_processor(
        BatchLogRecordProcessor(exporter, max_queue_size=MAX_QUEUE, max_export_batch_size=512)
    )
    return Pipeline(provider, owned=True)


class SizedExporter:
    """Splits an export batch so that no request outgrows the receiver's limit:
    512 episodes of 200 KB are 100 MB, which the receiver would refuse whole."""

    def __init__(self, inner: Any, limit: int = MAX_EXPORT_BYTES) -> None:
        self._inner = inner
        self._limit = limit

    def export(self, batch: Sequence[Any]) -> Any:
        # The SDK's result enum is compared by name so this class needs no SDK
        # import of its own (and can be tested without one).
        if not batch:
            return self._inner.export(batch)
        result = failed = None
        for chunk in split(batch, self._limit, lambda r: size_of(getattr(r, "log_record", r).body)):
            result = self._inner.export(chunk)
            if getattr(result, "name", result) != "SUCCESS":
                failed = result
        return failed if failed is not None else result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


def split(items: Sequence[Any], limit: int, size: Any) -> list:
    """``items`` in order, cut into runs whose sizes sum to at most ``limit``
    (a single item over it goes alone)."""
    chunks: list = []
    current: list = []
    total = 0
    for item in items:
        n = size(item)
        if current and total + n > limit:
            chunks.append(current)
            current, total = [], 0
        current.append(item)
        total += n
    if current:
        chunks.append(current)
    return chunks


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
