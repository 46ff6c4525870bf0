import os
import unittest
from unittest import mock

from prime_otel import _otel


class LogsURL(unittest.TestCase):
    def test_an_endpoint_is_a_base_that_gets_v1_logs_and_the_logs_variable_is_the_whole_url(self):
        cases = [
            ({}, "http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/logs"),
            ({}, "http://collector:4318/", "http://collector:4318/v1/logs"),
            ({"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://c:9/custom"}, "http://c:9/custom", "http://c:9/custom"),
        ]
        for env, endpoint, want in cases:
            with self.subTest(endpoint=endpoint), mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(_otel.logs_url(endpoint), want)


class Emit(unittest.TestCase):
    def test_a_record_is_queued_as_one_tuple_sized_by_its_text_and_only_start_and_end_are_essential(self):
        from prime_otel import _delivery
        from prime_otel._transport import Outcome

        d = _delivery.Delivery(lambda items, timeout: Outcome(True), linger=30, max_bytes=200)
        pipeline = _otel.Pipeline(d)
        self.addCleanup(d.close)
        self.assertTrue(pipeline.emit("prime.episode", {"prime.work.step": 1}, "x" * 100, 5))
        self.assertEqual([(i.record, i.size, i.kind) for i in d._queue],
                         [(("prime.episode", {"prime.work.step": 1}, "x" * 100, 5), 100 + _otel.RECORD_OVERHEAD, "prime.episode")])
        with self.assertLogs("prime_otel", "WARNING"):
            self.assertFalse(pipeline.emit("prime.metrics", {}, {"loss": 1.0}, 6))  # past the 200-byte bound
        self.assertTrue(pipeline.emit("prime.run.end", {"prime.run.status": "completed"}, None, 7))


class SizeOf(unittest.TestCase):
    def test_text_is_measured_in_utf8_bytes(self):
        self.assertEqual(_otel.size_of("é" * 10) - _otel.size_of("e" * 10), 10)

    def test_a_body_is_measured_through_its_maps_and_lists(self):
        self.assertGreater(_otel.size_of({"a": ["x" * 100, 1.0]}), 100)


if __name__ == "__main__":
    unittest.main()
