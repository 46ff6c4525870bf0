"""One OTLP/HTTP request and what its answer means, against a collector on a loopback port."""

import gzip
import json
import os
import time
import unittest

from prime_otel import _transport

from .collector import Collector, closed_port


class Answers(unittest.TestCase):
    def setUp(self):
        self.collector = Collector()
        self.addCleanup(self.collector.close)
        self.transport = _transport.Transport(self.collector.url + "/v1/logs")
        self.addCleanup(self.transport.close)

    def test_each_answer_is_classified_as_the_otlp_specification_says(self):
        cases = [
            (200, {}, b"", dict(ok=True, retry=False, rejected=0)),
            (429, {"Retry-After": "7"}, b"slow down", dict(ok=False, retry=True, retry_after=7.0)),
            (503, {}, b"", dict(ok=False, retry=True, retry_after=None)),
            (502, {}, b"", dict(ok=False, retry=True)),
            (504, {}, b"", dict(ok=False, retry=True)),
            (400, {}, b"bad body", dict(ok=False, retry=False, status=400)),
            (401, {}, b"", dict(ok=False, retry=False, status=401)),
            (413, {}, b"", dict(ok=False, retry=False)),
            (200, {"Content-Type": "application/json"}, b'{"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"x"}}', dict(ok=True, rejected=2)),
        ]
        for status, headers, body, want in cases:
            with self.subTest(status=status, headers=headers):
                self.collector.logs_status, self.collector.logs_headers, self.collector.logs_body = status, headers, body
                outcome = self.transport.post(b"{}", "application/json", 2)
                self.assertEqual({k: getattr(outcome, k) for k in want}, want)

    def test_a_refusal_names_the_status_and_the_bodys_start(self):
        self.collector.logs_status, self.collector.logs_body = 400, b"logs with an unknown field"
        outcome = self.transport.post(b"{}", "application/json", 2)
        self.assertEqual("answered 400: logs with an unknown field", outcome.error)

    def test_no_collector_is_a_refused_connection_that_may_pass(self):
        outcome = _transport.Transport(f"http://127.0.0.1:{closed_port()}/v1/logs").post(b"", "application/json", 1)
        self.assertEqual((outcome.ok, outcome.retry), (False, True))
        self.assertIn("connection refused", outcome.error)

    def test_a_stalled_collector_is_given_up_after_the_timeout_and_may_pass(self):
        self.collector.logs_delay = 1.0
        started = time.monotonic()
        outcome = self.transport.post(b"", "application/json", 0.2)
        self.assertLess(time.monotonic() - started, 0.9)
        self.assertEqual((outcome.ok, outcome.retry), (False, True))
        self.assertIn("no answer", outcome.error)

    def test_headers_from_the_otlp_variables_and_gzip_are_sent(self):
        headers = _transport.otlp_headers({"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20t0k,x-team=a"})
        self.assertEqual(headers, {"authorization": "Bearer t0k", "x-team": "a"})
        t = _transport.Transport(self.collector.url + "/v1/logs", headers=headers, compression="gzip")
        self.assertTrue(t.post(b"payload", "application/x-protobuf", 2).ok)
        t.close()
        sent = self.collector.posts()[-1]
        self.assertEqual((sent["headers"]["authorization"], sent["headers"]["Content-Encoding"]), ("Bearer t0k", "gzip"))
        self.assertEqual(gzip.decompress(sent["body"]), b"payload")

    def test_the_logs_variable_wins_over_the_general_one(self):
        env = {"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "b=2"}
        self.assertEqual(_transport.otlp_headers(env), {"b": "2"})

    def test_one_connection_is_kept_and_a_forked_child_opens_its_own(self):
        self.assertTrue(self.transport.post(b"1", "application/json", 2).ok)
        self.assertTrue(self.transport.post(b"2", "application/json", 2).ok)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.write(write, json.dumps(self.transport.post(b"child", "application/json", 2).ok).encode())
            finally:
                os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        child_ok = json.loads(os.read(read, 100))
        os.close(read)
        self.assertTrue(self.transport.post(b"3", "application/json", 2).ok)
        ports = {r["body"]: r["client_port"] for r in self.collector.posts()}
        self.assertTrue(child_ok)
        self.assertEqual(ports[b"1"], ports[b"2"])
        self.assertEqual(ports[b"2"], ports[b"3"])  # the parent's connection survived the child
        self.assertNotEqual(ports[b"child"], ports[b"1"])


if __name__ == "__main__":
    unittest.main()
