"""Which key goes with a request to the collector, and where it may go: the
rule, the OTel header variables, and that the key is shown nowhere. No
network: the requests themselves are in test_status.py and test_run.py."""

import http.client
import logging
import random
import unittest

import prime_otel as pr
from prime_otel import _auth

KEY = "pk-tenant-a-0123456789abcdef"


class TheKeyTravelsOnlyOverTLSOrWithinTheHost(unittest.TestCase):
    def test_each_endpoint_is_decided_by_its_scheme_and_host_name(self):
        cases = [
            ("https://collector.example:4318/v1/logs", True),
            ("HTTPS://collector.example/v1/logs", True),
            ("https://10.0.0.5:4318/v1/logs", True),
            ("http://127.0.0.1:4318/v1/logs", True),
            ("http://127.8.9.10:4318/v1/logs", True),
            ("http://localhost:4318/v1/logs", True),
            ("http://LOCALHOST.:4318/v1/logs", True),
            ("http://[::1]:4320", True),
            ("http://[::ffff:127.0.0.1]:4318", True),
            ("http://collector:4318/v1/logs", False),
            ("http://10.0.0.5:4318/v1/logs", False),
            ("http://0.0.0.0:4318/v1/logs", False),
            ("http://[::2]:4318", False),
            ("http://[::ffff:10.0.0.1]:4318", False),
            ("http://localhost.example.com:4318", False),
            ("http://127.0.0.1.nip.io:4318", False),
            ("http://user:pw@collector:4318", False),
            ("ftp://127.0.0.1/x", False),
        ]
        for url, want in cases:
            with self.subTest(url=url):
                self.assertEqual(_auth.may_carry_key(url), want)


class OtlpHeaderVariables(unittest.TestCase):
    def test_they_are_read_as_the_otel_specification_says(self):
        general = "OTEL_EXPORTER_OTLP_HEADERS"
        logs = "OTEL_EXPORTER_OTLP_LOGS_HEADERS"
        cases = [
            ({}, {}, None),
            ({general: ""}, {}, None),
            ({general: "a=1"}, {"a": "1"}, general),
            ({general: "Authorization=Bearer%20t0k,X-Team=a"}, {"authorization": "Bearer t0k", "x-team": "a"}, general),
            ({general: " a = 1 , b=2 "}, {"a": "1", "b": "2"}, general),
            ({general: "a=x%2Cy"}, {"a": "x,y"}, general),
            ({general: "a=b=c"}, {"a": "b=c"}, general),
            ({general: "a=1,a=2"}, {"a": "2"}, general),
            ({general: "a=1,,b=2,"}, {"a": "1", "b": "2"}, general),
            ({general: "x%2Dteam=1"}, {"x-team": "1"}, general),
            ({general: "a=1", logs: "b=2"}, {"b": "2"}, logs),
            ({general: "a=1", logs: ""}, {"a": "1"}, general),
            ({general: "a=1", "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "c=3"}, {"a": "1"}, general),
        ]
        for env, want, variable in cases:
            with self.subTest(env=env):
                self.assertEqual(_auth.otlp_headers(env), (want, variable))

    def test_the_metrics_variable_is_the_metrics_signals(self):
        env = {"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "c=3"}
        self.assertEqual(_auth.otlp_headers(env, "metrics"), ({"c": "3"}, "OTEL_EXPORTER_OTLP_METRICS_HEADERS"))

    def test_a_pair_no_header_can_carry_is_left_out_with_a_warning_that_never_shows_its_value(self):
        cases = [
            ("noequals-secretvalue", "pair 1", "not name=value"),
            ("bad name=secretvalue", "pair 1", "not an HTTP header name"),
            ("x-token=secret%0Avalue", "x-token", "control character"),
            ("x-token=secret%E2%82%ACvalue", "x-token", "cannot carry"),
            ("content-type=secretvalue", "content-type", "sets that header itself"),
        ]
        for raw, named, why in cases:
            with self.subTest(raw=raw), self.assertLogs("prime_otel", "WARNING") as logs:
                headers, _ = _auth.otlp_headers({"OTEL_EXPORTER_OTLP_HEADERS": raw + ",ok=1"})
                self.assertEqual(headers, {"ok": "1"})
                self.assertEqual(len(logs.output), 1)
                self.assertIn(f"OTEL_EXPORTER_OTLP_HEADERS: {named} is left out", logs.output[0])
                self.assertIn(why, logs.output[0])
                self.assertNotIn("secret", logs.output[0])

    def test_whatever_the_variable_holds_every_header_kept_is_one_http_client_sends(self):
        # Seeded random text over the characters that matter (separators,
        # escapes, controls, non-latin-1): a header http.client refuses would
        # raise on the delivery thread, at every request of the run.
        rng = random.Random(31)
        alphabet = "ab=,% \t\r\n\x00\x7f-_.:é€%0A%0D%2C%3D%20%E2%82%AC"
        for _ in range(3000):
            raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
            with self.subTest(raw=raw):
                logging.disable(logging.WARNING)  # the warnings for left-out pairs are tested above
                try:
                    headers, _ = _auth.otlp_headers({"OTEL_EXPORTER_OTLP_HEADERS": raw})
                finally:
                    logging.disable(logging.NOTSET)
                for name, value in headers.items():
                    self.assertTrue(http.client._is_legal_header_name(name.encode("ascii")), name)
                    self.assertIsNone(http.client._is_illegal_header_value(value.encode("latin-1")), value)


class WhichKeyIsSent(unittest.TestCase):
    LOOPBACK = "http://127.0.0.1:4318/v1/logs"
    REMOTE = "http://collector.internal:4318/v1/logs"

    def resolve(self, env, api_key=None, urls=(LOOPBACK,)):
        secret = _auth.Secret(api_key) if api_key is not None else None
        return _auth.for_collector(list(urls), api_key=secret, environ=env)

    def test_the_key_is_the_argument_else_prime_api_key_sent_as_a_bearer_token(self):
        cases = [
            ({"PRIME_API_KEY": KEY}, None, "Bearer " + KEY, "PRIME_API_KEY"),
            ({"PRIME_API_KEY": " " + KEY + "\n"}, None, "Bearer " + KEY, "PRIME_API_KEY"),
            ({"PRIME_API_KEY": "from-env"}, KEY, "Bearer " + KEY, "init(api_key=)"),
            ({"PRIME_API_KEY": KEY}, "  ", "Bearer " + KEY, "PRIME_API_KEY"),
            ({"PRIME_API_KEY": ""}, None, None, None),
            ({}, None, None, None),
        ]
        for env, arg, header, source in cases:
            with self.subTest(env=env, arg=arg):
                (credentials,) = self.resolve(env, arg)
                self.assertEqual((credentials.headers().get("authorization"), credentials.source), (header, source))

    def test_an_authorization_header_in_the_otlp_variables_wins_over_the_key(self):
        env = {"PRIME_API_KEY": KEY, "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20other,x-team=a"}
        (credentials,) = self.resolve(env, api_key="arg-key")
        self.assertEqual(credentials.headers(), {"authorization": "Bearer other", "x-team": "a"})
        self.assertEqual(credentials.source, "OTEL_EXPORTER_OTLP_HEADERS")

    def test_other_otlp_headers_go_with_the_key(self):
        (credentials,) = self.resolve({"PRIME_API_KEY": KEY, "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "x-team=a"})
        self.assertEqual(credentials.headers(), {"x-team": "a", "authorization": "Bearer " + KEY})

    def test_over_plain_http_to_another_host_the_key_is_withheld_with_one_warning_naming_its_setting_and_the_endpoint(self):
        for env, arg, setting in (({"PRIME_API_KEY": KEY}, None, "PRIME_API_KEY"), ({}, KEY, "init(api_key=)")):
            with self.subTest(setting=setting), self.assertLogs("prime_otel", "WARNING") as logs:
                (credentials,) = self.resolve(env, arg, urls=[self.REMOTE])
                self.assertEqual(credentials.headers(), {})
                self.assertEqual((credentials.source, credentials.withheld), (None, setting))
                self.assertEqual(len(logs.output), 1)
                self.assertIn(f"the platform key from {setting} is not sent to http://collector.internal:4318", logs.output[0])
                self.assertNotIn(KEY, logs.output[0])

    def test_the_rule_is_per_endpoint_and_says_every_withheld_one_in_its_one_warning(self):
        status = "http://status.internal:4320"
        with self.assertLogs("prime_otel", "WARNING") as logs:
            logs_credentials, status_credentials = self.resolve({"PRIME_API_KEY": KEY}, urls=[self.LOOPBACK, status])
        self.assertEqual(logs_credentials.headers(), {"authorization": "Bearer " + KEY})
        self.assertEqual(status_credentials.headers(), {})
        with self.assertLogs("prime_otel", "WARNING") as logs:
            self.resolve({"PRIME_API_KEY": KEY}, urls=[self.REMOTE, status])
        self.assertEqual(len(logs.output), 1)
        self.assertIn("http://collector.internal:4318 and http://status.internal:4320", logs.output[0])

    def test_no_key_means_no_warning(self):
        with self.assertNoLogs("prime_otel", "WARNING"):
            (credentials,) = self.resolve({}, urls=[self.REMOTE])
        self.assertEqual((credentials.headers(), credentials.withheld), ({}, None))

    def test_an_otlp_authorization_header_is_sent_off_the_host_as_any_sdk_sends_it_with_a_warning(self):
        env = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20" + KEY}
        with self.assertLogs("prime_otel", "WARNING") as logs:
            (credentials,) = self.resolve(env, urls=[self.REMOTE])
        self.assertEqual(credentials.headers(), {"authorization": "Bearer " + KEY})
        self.assertIn("the authorization header from OTEL_EXPORTER_OTLP_HEADERS goes to http://collector.internal:4318 in clear text", logs.output[0])
        self.assertNotIn(KEY, logs.output[0])

    def test_a_key_no_bearer_header_can_carry_is_refused_without_being_shown(self):
        for bad in ("Bearer " + KEY, KEY + "\nx", KEY + "é", "a\x00b"):
            for env, arg in (({"PRIME_API_KEY": bad}, None), ({}, bad)):
                with self.subTest(bad=bad, arg=arg is not None):
                    with self.assertRaises(pr.ConfigurationError) as raised:
                        self.resolve(env, arg)
                    self.assertNotIn(bad.strip(), str(raised.exception))
                    self.assertIn("PRIME_API_KEY" if arg is None else "init(api_key=)", str(raised.exception))


class TheKeyIsShownNowhere(unittest.TestCase):
    def test_no_repr_str_or_format_of_what_holds_it_shows_it(self):
        secret = _auth.Secret(KEY)
        (credentials,) = _auth.for_collector(["http://127.0.0.1:4318"], api_key=secret, environ={})
        shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", "%s" % secret, repr(credentials), str(credentials)]
        for text in shown:
            self.assertNotIn(KEY, text)
        self.assertEqual(secret.reveal(), KEY)
        self.assertIn("authorization", repr(credentials))

    def test_what_a_collector_answers_is_scrubbed_of_every_secret_the_request_carried(self):
        env = {"PRIME_API_KEY": KEY, "OTEL_EXPORTER_OTLP_HEADERS": "x-honeycomb-team=hc-secret-123,x-team=a"}
        (credentials,) = _auth.for_collector(["http://127.0.0.1:4318"], api_key=None, environ=env)
        said = f"token 'Bearer {KEY}' refused; also {KEY} and hc-secret-123; team a"
        self.assertEqual(credentials.scrub(said), "token '[REDACTED]' refused; also [REDACTED] and [REDACTED]; team a")

    def test_each_refusal_says_whose_key_or_that_none_was_sent(self):
        cases = [
            (_auth.Credentials(source="PRIME_API_KEY"), 401, "refused the key from PRIME_API_KEY (401)"),
            (_auth.Credentials(source="init(api_key=)"), 403, "refused the key from init(api_key=) (403)"),
            (_auth.Credentials(withheld="PRIME_API_KEY"), 401, "the one from PRIME_API_KEY was not sent: the endpoint is plain http"),
            (_auth.Credentials(), 401, "none was sent: set PRIME_API_KEY or init(api_key=), or an authorization header in OTEL_EXPORTER_OTLP_HEADERS"),
        ]
        for credentials, status, want in cases:
            with self.subTest(want=want):
                self.assertIn(want, credentials.refusal(status))


if __name__ == "__main__":
    unittest.main()
