"""The package's OTLP encoding (prime_otel._wire): read back field by field
with a protobuf reader of its own, so it runs on a bare python3; and, where
the SDK is importable (scripts/python-cost.sh's PYTHONPATH), compared byte for
byte with what the SDK's own encoder writes for the same records."""

import json
import struct
import unittest

from prime_otel import _wire

RESOURCE = b"\x0a\x0d\x0a\x03key\x12\x06\x0a\x04run1"  # Resource{attributes: [key="run1"]}
SCOPE = b"\x0a\x0aprime_otel\x12\x050.1.0"  # InstrumentationScope{name, version}
T = 1_767_225_600_123_456_789


def fields(data):
    """A protobuf message as [(field number, value)], in wire order: a
    varint as an int, a fixed64 as its 8 bytes, a length-delimited as bytes."""
    out, i = [], 0
    while i < len(data):
        key, i = _read_varint(data, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = _read_varint(data, i)
        elif kind == 1:
            value, i = data[i:i + 8], i + 8
        elif kind == 2:
            n, i = _read_varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            raise AssertionError(f"wire type {kind} is not one the encoder writes")
        out.append((number, value))
    if i != len(data):
        raise AssertionError("a field runs past the end of its message")
    return out


def _read_varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def log_records(request):
    """The request's one resource, scope and its records' fields."""
    (number, resource_logs), = fields(request)
    assert number == 1
    rl = fields(resource_logs)
    assert [n for n, _ in rl] == [1, 2], rl
    sl = fields(rl[1][1])
    assert sl[0][0] == 1 and all(n == 2 for n, _ in sl[1:])
    return rl[0][1], sl[0][1], [fields(v) for _, v in sl[1:]]


def any_value(data):
    (number, value), = fields(data) or [(None, None)]
    if number == 1:
        return value.decode()
    if number == 2:
        return bool(value)
    if number == 3:
        return value - (1 << 64) if value >= 1 << 63 else value
    if number == 4:
        return struct.unpack("<d", value)[0]
    return None


def attributes(record):
    out = {}
    for number, kv in record:
        if number == 6:
            (k_number, key), (v_number, value) = fields(kv)
            assert (k_number, v_number) == (1, 2)
            out[key.decode()] = any_value(value)
    return out


class Encoding(unittest.TestCase):
    def setUp(self):
        self.encoder = _wire.Encoder(RESOURCE, SCOPE)

    def test_a_request_holds_the_resource_and_scope_given_and_the_records_in_order(self):
        request = self.encoder.request([("prime.episode", {}, f'{{"i":{i}}}', T + i) for i in range(3)])
        resource, scope, records = log_records(request)
        self.assertEqual((resource, scope), (RESOURCE, SCOPE))
        self.assertEqual([json.loads(any_value(dict(r)[5])) for r in records], [{"i": 0}, {"i": 1}, {"i": 2}])

    def test_a_record_has_its_time_twice_its_json_text_body_its_attributes_and_its_event_name_in_field_order(self):
        _, _, (record,) = log_records(self.encoder.request([("prime.episode", {"prime.work.step": 10}, '{"prompt":"p"}', T)]))
        self.assertEqual([n for n, _ in record], [1, 5, 6, 11, 12])
        by_number = dict(record)
        self.assertEqual(struct.unpack("<Q", by_number[1])[0], T)
        self.assertEqual(by_number[1], by_number[11])
        self.assertEqual(any_value(by_number[5]), '{"prompt":"p"}')
        self.assertEqual(attributes(record), {"prime.work.step": 10})
        self.assertEqual(by_number[12], b"prime.episode")

    def test_a_mapping_body_is_sent_as_its_compact_json_text(self):
        _, _, (record,) = log_records(self.encoder.request([("prime.metrics", {"prime.step": 3}, {"loss": 0.5, "n": 2}, T)]))
        self.assertEqual(any_value(dict(record)[5]), '{"loss":0.5,"n":2}')

    def test_no_body_is_an_empty_any_value_as_the_sdk_writes_it(self):
        _, _, (record,) = log_records(self.encoder.request([("prime.run.end", {"prime.run.status": "completed"}, None, T)]))
        self.assertEqual(dict(record)[5], b"")
        self.assertEqual(attributes(record), {"prime.run.status": "completed"})

    def test_attributes_keep_their_types_a_negative_int_and_a_false_bool_included(self):
        attrs = {"i": -3, "big": 2**62, "f": 0.25, "b": False, "s": "é", "zero": 0}
        _, _, (record,) = log_records(self.encoder.request([("x", attrs, None, T)]))
        self.assertEqual(attributes(record), attrs)

    def test_a_body_past_two_mebibytes_and_non_ascii_text_keep_their_lengths_right(self):
        big, accented = "x" * (3 << 20), '{"a":"é"}'
        _, _, records = log_records(self.encoder.request([("x", {}, big, T), ("y", {}, accented, T)]))
        self.assertEqual([any_value(dict(r)[5]) for r in records], [big, accented])

    def test_varints_match_the_protobuf_rule_at_every_length_boundary(self):
        def reference(n):
            n &= (1 << 64) - 1
            out = bytearray()
            while n >= 0x80:
                out.append((n & 0x7F) | 0x80)
                n >>= 7
            out.append(n)
            return bytes(out)

        for n in [0, 1, 127, 128, 300, 0x3FFF, 0x4000, 0x1FFFFF, 0x200000, 2**35, 2**63 - 1, -1, -(2**63)]:
            with self.subTest(n=n):
                self.assertEqual(_wire.varint(n), reference(n))


def _sdk():
    try:
        from opentelemetry._logs import LogRecord
        from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
        from opentelemetry.sdk._logs import ReadableLogRecord
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    except ImportError:
        return None
    return LogRecord, encode_logs, ReadableLogRecord, Resource, InstrumentationScope


@unittest.skipUnless(_sdk(), "the OpenTelemetry SDK is not importable (scripts/python-cost.sh's PYTHONPATH has it)")
class SameBytesAsTheSDK(unittest.TestCase):
    def test_every_record_shape_the_package_sends_is_what_the_sdks_encoder_writes_byte_for_byte(self):
        from prime_otel import _otel

        LogRecord, encode_logs, ReadableLogRecord, Resource, InstrumentationScope = _sdk()
        resource = Resource.create({"prime.run.key": "k", "prime.run.environments": ["gsm8k"], "prime.training.max_steps": 20})
        records = [
            ("prime.episode", {"prime.work.step": 10}, '{"prompt":"p","reward":1.0}', T),
            ("prime.episode", {}, '{"a":"\\u00e9"}', T + 1),
            ("prime.metrics", {"prime.step": 3}, '{"loss":0.5}', T + 2),
            ("prime.metrics", {}, '{"x":1}', T + 3),
            ("prime.run.end", {"prime.run.status": "failed", "prime.run.error": "RuntimeError: é"}, None, T + 4),
            ("other", {"i": -3, "f": 0.5, "b": True}, "x" * (3 << 20), T + 5),
        ]
        scope = InstrumentationScope("prime_otel", __import__("prime_otel").__version__)
        sdk = [ReadableLogRecord(log_record=LogRecord(timestamp=t, observed_timestamp=t, body=body, attributes=attrs or None,
                                                      event_name=name), resource=resource, instrumentation_scope=scope)
               for name, attrs, body, t in records]
        self.assertEqual(_otel.sdk_encoder(resource).request(records), encode_logs(sdk).SerializeToString())


if __name__ == "__main__":
    unittest.main()
