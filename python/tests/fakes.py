"""Test doubles: the SDK boundary (prime_otel._otel) as a recorder, and the
value types trainers hand over (numpy-like scalars and arrays, verifiers-like
episodes), built without numpy so the tests run on a bare python3."""

import contextlib
import os
from typing import Any, Dict, List, Optional
from unittest import mock


class FakePipeline:
    def __init__(self, resource: Dict[str, Any], endpoint: str, owned: bool = True) -> None:
        self.resource = resource
        self.endpoint = endpoint
        self.owned = owned
        self.log: List[tuple] = []  # ("emit", event, attributes, body, ts) | ("flush",) | ("shutdown",)
        self.flush_ok = True

    def emit(self, event_name, attributes, body, timestamp_ns):
        self.log.append(("emit", event_name, dict(attributes), body, timestamp_ns))

    def flush(self, timeout):
        self.log.append(("flush",))
        return self.flush_ok

    def shutdown(self):
        self.log.append(("shutdown",))

    def events(self, name: Optional[str] = None) -> List[tuple]:
        return [e for e in self.log if e[0] == "emit" and (name is None or e[1] == name)]


class FakeOtel:
    """Stands in for the prime_otel._otel module."""

    def __init__(self) -> None:
        self.opened: List[FakePipeline] = []

    def open_pipeline(self, resource_attributes, endpoint):
        p = FakePipeline(dict(resource_attributes), endpoint)
        self.opened.append(p)
        return p


@contextlib.contextmanager
def patched(env: Optional[Dict[str, str]] = None):
    """A clean environment (only ``env``'s run variables) and a recording SDK;
    atexit hooks registered meanwhile are not left behind for the real exit."""
    fake = FakeOtel()
    keep = {k: v for k, v in os.environ.items() if not _run_variable(k)}
    keep.update(env or {})
    with mock.patch.dict(os.environ, keep, clear=True), mock.patch("prime_otel.run._otel", fake), \
            mock.patch("prime_otel.run.atexit") as fake_atexit:
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
