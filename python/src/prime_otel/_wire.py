"""OTLP/protobuf for the package's own records, written byte by byte.

Why by hand: the SDK's way to a request is a ``LogRecord``, a
``ReadWriteLogRecord`` (whose construction reads four environment variables
for its limits, every record), a ``ReadableLogRecord`` copy, then one protobuf
message per record, per attribute and per body node, serialized at the end.
For a 2 KB episode that is about 20 µs on the trainer's thread and as much
again on the delivery thread, twice ``json.dumps`` of the episode. The
package's records have four shapes only (``prime.run.start`` aside, which
``_status`` sends as OTLP/JSON): an event name, a few int or string
attributes, a body that is JSON text (or nothing), and one time. Their
encoding is a handful of length prefixes around the body's bytes.

What stays the SDK's: the resource (``Resource.create``: the detectors,
``service.instance.id``, ``OTEL_RESOURCE_ATTRIBUTES``, the application's
provider's resource) and the instrumentation scope, which the SDK's own
encoder turns into bytes once, when the pipeline opens (``_otel``).

The bytes are the ones the SDK's encoder writes for the same record (fields
in field-number order, a oneof value written even when it is its default,
an absent body as an empty ``AnyValue``): ``tests/test_wire.py`` decodes
them field by field, and, where the SDK is importable, compares them with
``encode_logs(...).SerializeToString()`` byte for byte.

The messages, from opentelemetry-proto's ``logs.proto`` and ``common.proto``:
``ExportLogsServiceRequest{1: ResourceLogs}``,
``ResourceLogs{1: Resource, 2: ScopeLogs, 3: schema_url}``,
``ScopeLogs{1: InstrumentationScope, 2: LogRecord, 3: schema_url}``,
``LogRecord{1: time_unix_nano (fixed64), 5: body (AnyValue), 6: attributes
(KeyValue), 11: observed_time_unix_nano (fixed64), 12: event_name}``,
``KeyValue{1: key, 2: value}``, ``AnyValue{1: string, 2: bool, 3: int64,
4: double}``.
"""

import json
import struct
from collections.abc import Mapping
from typing import Any, List, Sequence, Tuple

_FIXED64 = struct.Struct("<Q").pack
_DOUBLE = struct.Struct("<d").pack

# Tags: (field number << 3) | wire type (0 varint, 1 fixed64, 2 length-delimited).
_TIME = b"\x09"  # LogRecord.time_unix_nano, field 1, fixed64
_BODY = b"\x2a"  # LogRecord.body, field 5
_ATTRIBUTE = b"\x32"  # LogRecord.attributes, field 6
_OBSERVED = b"\x59"  # LogRecord.observed_time_unix_nano, field 11, fixed64
_EVENT_NAME = b"\x62"  # LogRecord.event_name, field 12
_STRING = b"\x0a"  # AnyValue.string_value, KeyValue.key, field 1
_KV_VALUE = b"\x12"  # KeyValue.value, field 2
_NO_BODY = _BODY + b"\x00"  # an empty AnyValue, as the SDK encodes body=None
_FIELD_1 = b"\x0a"  # ExportLogsServiceRequest.resource_logs; ResourceLogs.resource; ScopeLogs.scope
_FIELD_2 = b"\x12"  # ResourceLogs.scope_logs; ScopeLogs.log_records
_FIELD_3 = b"\x1a"  # ResourceLogs.schema_url; ScopeLogs.schema_url

#: A queued record: (event name, attributes, body, time in ns). The body is
#: JSON text, a mapping (sent as its JSON text) or None.
Record = Tuple[str, Mapping, Any, int]


def varint(n: int) -> bytes:
    """``n`` as a protobuf varint; a negative int64 as its two's complement.
    Lengths below 2 MiB (every record but the largest) take a short path."""
    if n < 0:
        n += 1 << 64
    if n < 0x80:
        return bytes((n,))
    if n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    if n < 0x200000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _delimited(tag: bytes, payload: bytes) -> bytes:
    return tag + varint(len(payload)) + payload


def any_value(value: Any) -> bytes:
    """An ``AnyValue`` for an attribute: str, bool, int or float; anything
    else as its ``str()``, as the SDK sends a value it does not know."""
    if isinstance(value, bool):
        return b"\x10" + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"\x18" + varint(value)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE(value)
    return _delimited(_STRING, str(value).encode("utf-8"))


class Encoder:
    """Requests of one resource and scope. ``resource`` and ``scope`` are the
    serialized ``Resource`` and ``InstrumentationScope`` messages (the SDK's
    encoder makes them once); the schema URLs are their messages' own."""

    def __init__(self, resource: bytes, scope: bytes, resource_schema_url: str = "", scope_schema_url: str = "") -> None:
        self._resource_field = _delimited(_FIELD_1, resource)
        self._scope_field = _delimited(_FIELD_1, scope)
        self._resource_schema = _delimited(_FIELD_3, resource_schema_url.encode()) if resource_schema_url else b""
        self._scope_schema = _delimited(_FIELD_3, scope_schema_url.encode()) if scope_schema_url else b""
        self._event_fields: dict = {}
        self._attribute_fields: dict = {}

    def request(self, records: Sequence[Record]) -> bytes:
        """One ``ExportLogsServiceRequest`` holding ``records`` in order."""
        parts: List[bytes] = []
        append = parts.append
        records_size = 0
        for record in records:
            at = len(parts)
            append(b"")  # the record's tag and length, filled in below
            size = self._record(record, parts)
            parts[at] = _FIELD_2 + varint(size)
            records_size += len(parts[at]) + size
        scope_logs = len(self._scope_field) + records_size + len(self._scope_schema)
        scope_head = _FIELD_2 + varint(scope_logs)
        resource_logs = len(self._resource_field) + len(scope_head) + scope_logs + len(self._resource_schema)
        head = [_FIELD_1 + varint(resource_logs), self._resource_field, scope_head, self._scope_field]
        parts.append(self._scope_schema)
        parts.append(self._resource_schema)
        return b"".join(head + parts)

    def _record(self, record: Record, parts: List[bytes]) -> int:
        """Appends one ``LogRecord``'s fields to ``parts``; returns their size."""
        event, attributes, body, time_ns = record
        stamp = _FIXED64(time_ns)
        size = 18  # the two timestamps: a tag and 8 bytes each
        parts.append(_TIME)
        parts.append(stamp)
        if body is None:
            parts.append(_NO_BODY)
            size += 2
        else:
            if not isinstance(body, str):
                body = json.dumps(body, separators=(",", ":"), allow_nan=False)
            data = body.encode("utf-8")
            n = varint(len(data))
            inner = 1 + len(n) + len(data)
            head = _BODY + varint(inner) + _STRING + n
            parts.append(head)
            parts.append(data)
            size += len(head) + len(data)
        for key, value in attributes.items():
            field = self._attribute(key, value)
            parts.append(field)
            size += len(field)
        parts.append(_OBSERVED)
        parts.append(stamp)
        name = self._event_fields.get(event)
        if name is None:
            name = self._event_fields[event] = _delimited(_EVENT_NAME, event.encode("utf-8")) if event else b""
        parts.append(name)
        return size + len(name)

    def _attribute(self, key: str, value: Any) -> bytes:
        """A ``KeyValue`` field; the common ones (a step, a status) are kept."""
        cacheable = isinstance(value, (int, str)) and len(self._attribute_fields) < 4096
        if cacheable:
            found = self._attribute_fields.get((key, type(value), value))
            if found is not None:
                return found
        kv = _delimited(_STRING, key.encode("utf-8")) + _delimited(_KV_VALUE, any_value(value))
        field = _delimited(_ATTRIBUTE, kv)
        if cacheable:
            self._attribute_fields[(key, type(value), value)] = field
        return field
