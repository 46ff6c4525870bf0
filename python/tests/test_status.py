"""init()'s check of the run, against a collector on a loopback port: the
start event over OTLP/JSON, then the run status route's answers."""

import json
import time
import unittest

import prime_otel as pr
from prime_otel import _status

from .collector import Collector, answer, closed_port
from .fakes import patched

DASHBOARD = "https://app.primeintellect.ai/dashboard/training/"


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

    def test_a_collector_that_wants_credentials_fails_init_naming_the_headers_variable(self):
        self.collector.logs_status = 401
        with self.assertRaisesRegex(pr.ConfigurationError, "OTEL_EXPORTER_OTLP_HEADERS"):
            self.init()

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
