"""One OTLP/HTTP request and what its answer means, against a collector on a loopback port."""

import gzip
import json
import os
import time
import unittest

import prime_otel as pr
from prime_otel import _auth, _transport

from .collector import Collector, closed_port

TLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "tls")
KEY = "pk-tenant-a-0123456789abcdef"


def credentials(env):
    (c,) = _auth.for_collector(["http://127.0.0.1/v1/logs"], api_key=None, environ=env)
    return c


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
            (401, {}, b"", dict(ok=False, retry=False, status=401, refused_key=True)),
            (403, {}, b"", dict(ok=False, retry=False, status=403, refused_key=True)),
            (413, {}, b"", dict(ok=False, retry=False)),
            (200, {"Content-Type": "application/json"}, b'{"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"x"}}', dict(ok=True, rejected=2)),
        ]
        for status, headers, body, want in cases:
            with self.subTest(status=status, headers=headers):
                self.collector.logs_status, self.collector.logs_headers, self.collector.logs_body = status, headers, body
                outcome = self.transport.post(b"{}", "application/json", 2)
                self.assertEqual({k: getattr(outcome, k) for k in want}, want)

    def test_a_partial_success_says_how_many_records_were_rejected_and_the_collectors_reason(self):
        self.collector.logs_headers = {"Content-Type": "application/json"}
        self.collector.logs_body = b'{"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"bad_body: not a JSON object"}}'
        outcome = self.transport.post(b"{}", "application/json", 2)
        self.assertEqual((outcome.ok, outcome.rejected, outcome.status), (True, 2, 200))
        self.assertEqual(outcome.error, "answered 200 rejecting 2 record(s): bad_body: not a JSON object")

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

    def test_a_refused_key_is_final_and_said_as_whose_with_the_answer_scrubbed_of_the_key(self):
        self.collector.key = "the-only-key"
        t = _transport.Transport(self.collector.url + "/v1/logs", credentials({"PRIME_API_KEY": KEY}))
        self.addCleanup(t.close)
        outcome = t.post(b"{}", "application/json", 2)
        self.assertEqual((outcome.ok, outcome.retry, outcome.refused_key, outcome.status), (False, False, True, 401))
        self.assertEqual(outcome.error, "refused the key from PRIME_API_KEY (401): authentication didn't succeed: "
                                        "'[REDACTED]' is not a key this gateway lets in")
        self.assertEqual(self.collector.posts()[-1]["headers"]["authorization"], "Bearer " + KEY)

    def test_headers_from_the_otlp_variables_and_gzip_are_sent(self):
        creds = credentials({"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20t0k,x-team=a"})
        t = _transport.Transport(self.collector.url + "/v1/logs", creds, compression="gzip")
        self.assertTrue(t.post(b"payload", "application/x-protobuf", 2).ok)
        t.close()
        sent = self.collector.posts()[-1]
        self.assertEqual((sent["headers"]["authorization"], sent["headers"]["Content-Encoding"]), ("Bearer t0k", "gzip"))
        self.assertEqual(gzip.decompress(sent["body"]), b"payload")

    def test_the_logs_variable_wins_over_the_general_one_on_the_wire(self):
        env = {"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "b=2"}
        t = _transport.Transport(self.collector.url + "/v1/logs", credentials(env))
        self.addCleanup(t.close)
        self.assertTrue(t.post(b"", "application/json", 2).ok)
        sent = self.collector.posts()[-1]["headers"]
        self.assertEqual((sent.get("b"), sent.get("a")), ("2", None))

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


class TrustedCertificates(unittest.TestCase):
    """An https collector whose certificate only the test CA (testdata/tls) verifies."""

    def setUp(self):
        self.collector = Collector(tls=(os.path.join(TLS, "server.pem"), os.path.join(TLS, "server-key.pem")))
        self.addCleanup(self.collector.close)
        self.url = self.collector.url + "/v1/logs"

    def test_the_certificate_variable_is_the_ca_an_https_collector_is_verified_against(self):
        for variable in ("OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE"):
            with self.subTest(variable=variable):
                tls = _transport.tls_context({variable: os.path.join(TLS, "ca.pem")})
                t = _transport.Transport(self.url, tls=tls)
                self.addCleanup(t.close)
                self.assertTrue(t.post(b"{}", "application/json", 2).ok)

    def test_without_it_the_systems_trust_store_refuses_the_test_ca_and_the_request_may_pass(self):
        self.assertIsNone(_transport.tls_context({}))
        t = _transport.Transport(self.url)
        self.addCleanup(t.close)
        outcome = t.post(b"{}", "application/json", 2)
        self.assertEqual((outcome.ok, outcome.retry), (False, True))
        self.assertIn("CERTIFICATE_VERIFY_FAILED", outcome.error)
        self.assertEqual(self.collector.posts(), [])

    def test_the_logs_variable_wins_and_a_file_that_is_no_ca_is_said_naming_the_variable(self):
        env = {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/no/such/ca.pem", "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE": os.path.join(TLS, "ca.pem")}
        self.assertIsNotNone(_transport.tls_context(env))
        for path in ("/no/such/ca.pem", os.path.join(TLS, "README.md")):
            with self.subTest(path=path), self.assertRaisesRegex(pr.ConfigurationError, "OTEL_EXPORTER_OTLP_CERTIFICATE=.* is not a readable PEM file"):
                _transport.tls_context({"OTEL_EXPORTER_OTLP_CERTIFICATE": path})


if __name__ == "__main__":
    unittest.main()
