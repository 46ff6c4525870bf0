"""Test doubles: the SDK boundary (prime_otel._otel) as a recorder, and the
value types trainers hand over (numpy-like scalars and arrays, verifiers-like
episodes), built without numpy so the tests run on a bare python3."""

import contextlib
import os
from typing import Any, Dict, List, Optional
from unittest import mock

from prime_otel import _delivery, _otel, _status


class FakePipeline:
    def __init__(self, resource: Dict[str, Any], endpoint: str, **options: Any) -> None:
        self.resource = resource
        self.endpoint = endpoint
        self.options = options
        self.log: List[tuple] = []  # ("emit", event, attributes, body, ts) | ("flush",) | ("shutdown",)
        self.flush_ok = True
        self.dropped = 0
        self.failed = 0
        self.key_refusal = None
        self.refusal_listener = None

    def emit(self, event_name, attributes, body, timestamp_ns):
        self.log.append(("emit", event_name, dict(attributes), body, timestamp_ns))

    def watch_refusals(self, callback):
        self.refusal_listener = callback

    def refuse(self, records, status, message):
        """What the delivery thread does when the collector refuses records for good."""
        self.failed += records
        self.refusal_listener(_delivery.Refusal(records, status, message))

    def flush(self, timeout):
        self.log.append(("flush",))
        if self.flush_ok:
            return _delivery.FlushResult(True)
        return _delivery.FlushResult(False, 3, {"prime.episode": 2, "prime.run.end": 1}, "connection refused")

    def shutdown(self):
        self.log.append(("shutdown",))

    def events(self, name: Optional[str] = None) -> List[tuple]:
        return [e for e in self.log if e[0] == "emit" and (name is None or e[1] == name)]


class FakeOtel:
    """Stands in for the prime_otel._otel module (the SDK), and answers
    init()'s check of the run with ``answer`` (the status route's state)."""

    logs_url = staticmethod(_otel.logs_url)
    _delivery = _delivery

    def __init__(self) -> None:
        self.opened: List[FakePipeline] = []
        self.answer = _status.RunInfo("running")
        self.checks: List[Dict[str, Any]] = []

    def open_pipeline(self, resource_attributes, endpoint, **options):
        p = FakePipeline(dict(resource_attributes), endpoint, **options)
        self.opened.append(p)
        return p

    def check(self, resource, **kwargs):
        self.checks.append({"resource": dict(resource), **kwargs})
        return self.answer


@contextlib.contextmanager
def patched(env: Optional[Dict[str, str]] = None, ask_collector: bool = False):
    """A clean environment (only ``env``'s run variables) and a recording SDK;
    atexit hooks registered meanwhile are not left behind for the real exit.
    init()'s check of the run answers ``fake.answer``, unless ``ask_collector``
    leaves it to the real one (which asks the collector over HTTP)."""
    fake = FakeOtel()
    keep = {k: v for k, v in os.environ.items() if not _run_variable(k)}
    keep.update(env or {})
    check = mock.patch("prime_otel._status.check", fake.check) if not ask_collector else contextlib.nullcontext()
    with mock.patch.dict(os.environ, keep, clear=True), mock.patch("prime_otel.start._otel", fake), check, \
            mock.patch("prime_otel.run.atexit") as fake_atexit, mock.patch("prime_otel.run.Run.install_signal_handlers"):
        fake.atexit = fake_atexit
        yield fake


def _run_variable(name: str) -> bool:
    return name.startswith(("PRIME_", "OTEL_")) or name in ("RUN_ID", "RANK", "DP_RANK", "LOCAL_RANK")


class NumpyScalar:
    """What np.float32(0.5) or np.int64(3) offers: .item(), an empty shape, and
    a repr the SDK would have sent as a string."""

    def __init__(self, value: Any) -> None:
        self._value = value
        self.shape = ()

    def item(self) -> Any:
        return self._value

    def __repr__(self) -> str:
        return f"np.scalar({self._value!r})"


class NumpyArray:
    def __init__(self, values: List[Any]) -> None:
        self._values = values
        self.shape = (len(values),)

    def item(self) -> Any:
        raise ValueError("can only convert an array of size 1 to a Python scalar")

    def tolist(self) -> List[Any]:
        return list(self._values)


class Episode:
    """A verifiers Episode as the package sees it: something with to_record()."""

    def __init__(self, record: Dict[str, Any]) -> None:
        self._record = record

    def to_record(self) -> Dict[str, Any]:
        return self._record


class WirePipeline:
    """A pipeline with the package's real queue and transport, and JSON in
    place of the SDK's protobuf encoding: what a test needs to see records
    cross a real connection (to tests/collector.py's stand-in) without the SDK."""

    def __init__(self, url: str, credentials: Any = None, **options: Any) -> None:
        import json

        from prime_otel import _transport

        transport = _transport.Transport(url + "/v1/logs", credentials)

        def send(items, timeout):
            body = json.dumps([{"pid": os.getpid(), **item.record} for item in items]).encode()
            return transport.post(body, "application/json", timeout)

        options.setdefault("where", f"the collector at {url}/v1/logs")
        options.setdefault("linger", 0.0)
        self.delivery = _delivery.Delivery(send, backoff_first=0.02, backoff_max=0.1, **options)

    def emit(self, event_name, attributes, body, timestamp_ns):
        self.delivery.put({"event": event_name, "attributes": dict(attributes), "body": body}, 100, event_name,
                          essential=event_name in _otel.ESSENTIAL_EVENTS)

    def flush(self, timeout):
        return self.delivery.flush(timeout)

    def shutdown(self):
        self.delivery.close()

    def watch_refusals(self, callback):
        self.delivery.on_refusal = callback

    @property
    def dropped(self):
        return self.delivery.dropped

    @property
    def failed(self):
        return self.delivery.failed

    @property
    def key_refusal(self):
        return self.delivery.key_refusal


def sent_records(collector) -> List[Dict[str, Any]]:
    """Every record WirePipelines sent to ``collector`` and it took, in arrival order."""
    import json

    return [r for post in collector.posts() if post.get("answered") == 200 for r in json.loads(post["body"])]
