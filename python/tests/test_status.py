"""init()'s check of the run, against a collector on a loopback port: the
start event over OTLP/JSON, then the run status route's answers."""

import json
import logging
import os
import time
import traceback
import unittest
from unittest import mock

import prime_otel as pr
from prime_otel import _status

from .collector import Collector, answer, closed_port
from .fakes import patched

DASHBOARD = "https://app.primeintellect.ai/dashboard/training/"
KEY = "pk-tenant-a-0123456789abcdef"
TLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata", "tls")


class InitAsksTheCollector(unittest.TestCase):
    def setUp(self):
        self.collector = Collector()
        self.addCleanup(self.collector.close)
        self.env = {
            "PRIME_RUN_KEY": "k-1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.collector.url,
            "PRIME_STATUS_ENDPOINT": self.collector.url,
        }

    def init(self, env=None, **kwargs):
        with patched({**self.env, **(env or {})}, ask_collector=True) as otel:
            run = pr.init(**{"kind": "train", "model": "m", "environments": ["gsm8k"], "init_timeout": 2, **kwargs})
        return run, otel

    def test_a_created_run_has_the_platforms_id_and_dashboard_url(self):
        self.collector.answers = [answer("unknown"), answer("pending"), answer("running", id="plat-7", url=DASHBOARD + "plat-7")]
        run, otel = self.init()
        self.assertEqual((run.id, run.url, run.key), ("plat-7", DASHBOARD + "plat-7", "k-1"))
        self.assertEqual(len(otel.opened), 1)
        self.assertEqual(len(self.collector.gets()), 3)
        self.assertIn("/prime/v1/runs/status?kind=train&key=k-1", self.collector.gets()[0]["path"])

    def test_the_start_event_carries_the_runs_resource_as_otlp_json(self):
        self.collector.answers = [answer("running", id="p")]
        self.init()
        start = self.collector.posts()[0]
        self.assertEqual((start["path"], start["headers"]["Content-Type"]), ("/v1/logs", "application/json"))
        body = json.loads(start["body"])
        resource = {a["key"]: a["value"] for a in body["resourceLogs"][0]["resource"]["attributes"]}
        self.assertEqual(resource["prime.run.key"], {"stringValue": "k-1"})
        self.assertEqual(resource["prime.run.environments"], {"arrayValue": {"values": [{"stringValue": "gsm8k"}]}})
        record = body["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
        self.assertEqual(record["eventName"], "prime.run.start")

    def test_an_attached_run_is_asked_for_by_its_id(self):
        self.collector.answers = [answer("running", id="r-9", url=DASHBOARD + "r-9")]
        run, _ = self.init({"RUN_ID": "r-9"})
        self.assertIn("kind=train&id=r-9", self.collector.gets()[0]["path"])
        self.assertEqual(run.url, DASHBOARD + "r-9")

    def test_an_evaluation_is_asked_for_as_one(self):
        self.collector.answers = [answer("running", id="e-1", url="https://app/evals/e-1")]
        run, _ = self.init(kind="eval")
        self.assertIn("kind=eval&key=k-1", self.collector.gets()[0]["path"])
        self.assertEqual(run.id, "e-1")

    def test_a_refused_run_raises_at_init_with_the_platforms_reason(self):
        cases = [
            (answer("refused", reason="unauthorized", error="401 Unauthorized: Invalid or missing API key"), pr.UnauthorizedError, "Invalid or missing API key"),
            (dict(answer("refused", reason="run_refused", error="team t-1 may not create runs"), status_code=403), pr.ForbiddenError, "may not create runs"),
            (answer("refused", reason="run_refused", error="403 Forbidden: team not allow-listed"), pr.ForbiddenError, "allow-listed"),
            (answer("refused", reason="no_team", error="no team for the run: set prime.run.team_id or team_id"), pr.ConfigurationError, "PRIME_TEAM_ID"),
            (answer("refused", reason="run_refused", error="409 Conflict"), pr.APIError, "409"),
            (answer("refused", reason="run_limit", error="the collector already serves max_open_runs (2) open runs"), pr.APIError, "max_open_runs"),
            (answer("closed", id="p", status="completed"), pr.ConfigurationError, "already closed"),
        ]
        for said, error, text in cases:
            with self.subTest(said=said):
                self.collector.answers = [said]
                with self.assertRaisesRegex(error, text) as raised:
                    self.init()
                if isinstance(raised.exception, pr.APIError):
                    self.assertEqual(raised.exception.code, said.get("reason"))
        self.assertIs(pr.UnauthorizedError.__mro__[1], pr.APIError)

    def test_a_refusal_raises_before_any_sdk_is_loaded(self):
        self.collector.answers = [answer("refused", reason="unauthorized", error="Invalid or missing API key")]
        with patched(self.env, ask_collector=True) as otel, self.assertRaises(pr.UnauthorizedError):
            pr.init(kind="train", init_timeout=2)
        self.assertEqual(otel.opened, [])


    def test_the_otlp_headers_go_with_both_requests(self):
        self.collector.answers = [answer("running", id="p")]
        self.init({"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20abc"})
        self.assertEqual({r["headers"].get("authorization") for r in self.collector.requests}, {"Bearer abc"})

    def test_a_run_still_unknown_at_the_deadline_goes_on_with_one_warning(self):
        self.collector.answers = [answer("pending")]
        started = time.monotonic()
        with self.assertLogs("prime_otel", "WARNING") as logs:
            run, otel = self.init(init_timeout=0.5)
        self.assertLess(time.monotonic() - started, 2)
        self.assertEqual((run.id, run.url, len(otel.opened)), ("k-1", None, 1))
        self.assertIn("the platform has not answered yet", logs.output[0])

    def test_an_older_collector_without_the_route_goes_on_with_one_warning(self):
        self.collector.status_route = False
        with self.assertLogs("prime_otel", "WARNING") as logs:
            run, otel = self.init()
        self.assertEqual((run.id, run.url, len(otel.opened)), ("k-1", None, 1))
        self.assertEqual(len(logs.output), 1)
        self.assertIn("has no run status route", logs.output[0])

    def test_no_collector_at_all_goes_on_unchecked_within_the_wait(self):
        port = closed_port()
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "PRIME_STATUS_ENDPOINT": f"http://127.0.0.1:{port}"}
        started = time.monotonic()
        with self.assertLogs("prime_otel", "WARNING") as logs:
            run, otel = self.init(env)
        self.assertLess(time.monotonic() - started, 2)
        self.assertEqual((run.id, len(otel.opened)), ("k-1", 1))
        self.assertIn("connection refused", logs.output[0])
        self.assertIn("wait in the queue", logs.output[0])


class ACollectorThatDemandsTheKey(unittest.TestCase):
    """A multi-tenant gateway's receiver and status route (tests/collector.py
    with ``key``): only ``Authorization: Bearer <KEY>`` is let in."""

    def setUp(self):
        self.collector = Collector(key=KEY)
        self.addCleanup(self.collector.close)
        self.collector.answers = [answer("running", id="p-1", url=DASHBOARD + "p-1")]
        self.env = {
            "PRIME_RUN_KEY": "k-1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.collector.url,
            "PRIME_STATUS_ENDPOINT": self.collector.url,
        }

    def init(self, env=None, **kwargs):
        with patched({**self.env, **(env or {})}, ask_collector=True) as otel:
            run = pr.init(**{"kind": "train", "init_timeout": 2, **kwargs})
        return run, otel

    def refused(self, env=None, error=pr.UnauthorizedError, **kwargs):
        """init()'s exception, and everything the package logged meanwhile."""
        handler = Recorder()
        log = logging.getLogger("prime_otel")
        log.addHandler(handler)
        self.addCleanup(log.removeHandler, handler)
        self.addCleanup(log.setLevel, log.level)
        log.setLevel(logging.DEBUG)
        with self.assertRaises(error) as raised:
            self.init(env, **kwargs)
        return raised.exception, handler.lines

    def assertKeyShownNowhere(self, exc, lines, *keys):
        shown = [str(exc), repr(exc), "".join(traceback.format_exception(exc)), *lines]
        for key in keys:
            for text in shown:
                self.assertNotIn(key, text)

    def test_the_key_from_prime_api_key_goes_with_the_start_event_and_every_status_request_over_loopback(self):
        run, otel = self.init({"PRIME_API_KEY": KEY})
        self.assertEqual((run.id, run.url), ("p-1", DASHBOARD + "p-1"))
        self.assertEqual([(r["method"], r["headers"].get("authorization")) for r in self.collector.requests],
                         [("POST", "Bearer " + KEY), ("GET", "Bearer " + KEY)])
        self.assertEqual(otel.opened[0].options["credentials"].headers(), {"authorization": "Bearer " + KEY})

    def test_the_api_key_argument_wins_over_prime_api_key(self):
        self.init({"PRIME_API_KEY": "someone-elses"}, api_key=KEY)
        self.assertEqual({r["headers"].get("authorization") for r in self.collector.requests}, {"Bearer " + KEY})

    def test_an_authorization_header_in_the_otlp_variables_wins_over_the_key(self):
        self.init({"PRIME_API_KEY": "someone-elses", "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{KEY}"})
        self.assertEqual({r["headers"].get("authorization") for r in self.collector.requests}, {"Bearer " + KEY})

    def test_no_key_raises_unauthorized_at_init_saying_which_settings_would_send_one(self):
        exc, _ = self.refused()
        self.assertEqual((exc.status_code, exc.code), (401, "collector_refused_key"))
        self.assertIn("run k-1 was not let in: the collector at " + self.collector.url + "/v1/logs wants a key (401) and none was sent: "
                      "set PRIME_API_KEY or init(api_key=)", str(exc))
        self.assertEqual(len(self.collector.requests), 1)  # the start event only: a refusal is final

    def test_a_refused_key_raises_at_init_naming_its_setting_and_showing_it_nowhere(self):
        for env, kwargs, setting in (({"PRIME_API_KEY": "wrong-key-1234567"}, {}, "PRIME_API_KEY"),
                                     ({}, {"api_key": "wrong-key-1234567"}, "init(api_key=)")):
            with self.subTest(setting=setting):
                exc, lines = self.refused(env, **kwargs)
                self.assertIn(f"refused the key from {setting} (401)", str(exc))
                self.assertIn("'[REDACTED]' is not a key this gateway lets in", str(exc))  # the echo, scrubbed
                self.assertKeyShownNowhere(exc, lines, "wrong-key-1234567")

    def test_a_refusal_raises_before_any_pipeline_is_opened(self):
        with patched(self.env, ask_collector=True) as otel, self.assertRaises(pr.UnauthorizedError):
            pr.init(kind="train", init_timeout=2)
        self.assertEqual(otel.opened, [])

    def test_a_403_raises_forbidden(self):
        self.collector.refusal_status = 403
        exc, _ = self.refused({"PRIME_API_KEY": "wrong-key-1234567"}, error=pr.ForbiddenError)
        self.assertEqual(exc.status_code, 403)
        self.assertIn("refused the key from PRIME_API_KEY (403)", str(exc))

    def test_a_status_route_that_refuses_the_key_raises_too(self):
        self.collector.status_route_key = "the-routes-own-key"
        exc, lines = self.refused({"PRIME_API_KEY": KEY})
        self.assertIn(f"the run status route at {self.collector.url} refused the key from PRIME_API_KEY (401)", str(exc))
        self.assertKeyShownNowhere(exc, lines, KEY)

    def test_a_key_withheld_from_a_remote_status_route_is_said_when_that_route_refuses(self):
        # The OTLP endpoint is on loopback (the key goes), the route is not (it does not):
        # 192.0.2.1 (TEST-NET-1) is never dialled, the refusal comes before.
        with mock.patch("prime_otel._status.status_base", lambda *_: "http://192.0.2.1:4320"), \
                mock.patch("prime_otel._transport.Transport.get", lambda self, timeout: (401, b"no key")):
            with self.assertLogs("prime_otel", "WARNING") as logs:
                exc, _ = self.refused({"PRIME_API_KEY": KEY})
        self.assertIn("the platform key from PRIME_API_KEY is not sent to http://192.0.2.1:4320", logs.output[0])
        self.assertIn("the one from PRIME_API_KEY was not sent: the endpoint is plain http to another host", str(exc))
        self.assertEqual(self.collector.posts()[0]["headers"].get("authorization"), "Bearer " + KEY)

    def test_over_https_with_the_test_ca_the_key_goes_and_init_returns(self):
        collector = Collector(key=KEY, tls=(os.path.join(TLS, "server.pem"), os.path.join(TLS, "server-key.pem")))
        self.addCleanup(collector.close)
        collector.answers = [answer("running", id="p-tls")]
        env = {"PRIME_API_KEY": KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "PRIME_STATUS_ENDPOINT": collector.url,
               "OTEL_EXPORTER_OTLP_CERTIFICATE": os.path.join(TLS, "ca.pem")}
        run, otel = self.init(env)
        self.assertEqual(run.id, "p-tls")
        self.assertTrue(collector.url.startswith("https://127.0.0.1:"))
        self.assertEqual({r["headers"].get("authorization") for r in collector.requests}, {"Bearer " + KEY})
        self.assertIsNotNone(otel.opened[0].options["tls"])


class Recorder(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(self.format(record))


class StatusEndpoint(unittest.TestCase):
    def test_it_is_the_variable_else_the_otlp_host_on_port_4320(self):
        self.assertEqual(_status.status_base("http://collector:4318", None), "http://collector:4320")
        self.assertEqual(_status.status_base("http://[::1]:4318", None), "http://[::1]:4320")
        self.assertEqual(_status.status_base("http://c:4318", "http://agent:9/"), "http://agent:9")
        self.assertEqual(_status.status_base("http://c:4318", "127.0.0.1:4320"), "http://127.0.0.1:4320")


class SecondInit(unittest.TestCase):
    def test_a_second_init_in_one_process_is_a_new_run(self):
        with patched({}) as otel:
            first = pr.init(kind="train")
            first.finish()
            second = pr.init(kind="train")
        self.assertNotEqual(first.key, second.key)
        self.assertEqual(otel.opened[1].resource["prime.run.key"], second.key)

    def test_a_key_set_by_the_launcher_is_joined(self):
        with patched({"PRIME_RUN_KEY": "launcher-key"}):
            self.assertEqual(pr.init(kind="train").key, "launcher-key")


class Defaults(unittest.TestCase):
    def test_init_without_kind_is_an_evaluation_as_in_prime_runs(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(environments=["gsm8k"])
        self.assertEqual((run.kind, otel.opened[0].resource["prime.run.kind"]), ("eval", "eval"))

    def test_a_disabled_runs_id_starts_with_disabled(self):
        with patched({}):
            run = pr.init(kind="train", mode="disabled")
        self.assertTrue(run.id.startswith("disabled-"), run.id)
        self.assertIsNone(run.url)


if __name__ == "__main__":
    unittest.main()
