import json
import logging
import os
import traceback
import unittest
from unittest import mock

import prime_otel as pr
from prime_otel import _auth

from .collector import Collector
from .fakes import Episode, NumpyArray, NumpyScalar, WirePipeline, patched

KEY = "pk-tenant-a-0123456789abcdef"



class LogMetrics(unittest.TestCase):
    def test_one_call_is_one_prime_metrics_event_with_its_step_and_plain_values(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train")
            run.log_metrics({"loss": NumpyScalar(0.5), "reward": {"mean": 1, "max": NumpyScalar(2)}, "warm": True}, step=NumpyScalar(3))
        (_, name, attributes, body, ts), = otel.opened[0].events()
        self.assertEqual((name, attributes, body), ("prime.metrics", {"prime.step": 3}, {"loss": 0.5, "reward/mean": 1, "reward/max": 2, "warm": 1}))
        self.assertGreater(ts, 0)

    def test_with_no_step_the_row_is_keyed_by_its_time_and_carries_no_step(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train")
            run.log_metrics({"inference/throughput": 12.5})
            run.log_metrics({"x": 1.0, "_timestamp": 1767225600.5})
        (_, _, a1, b1, _), (_, _, a2, b2, ts2) = otel.opened[0].events()
        self.assertEqual((a1, b1), ({}, {"inference/throughput": 12.5}))
        self.assertEqual((a2, b2, ts2), ({}, {"x": 1.0}, 1767225600500000000))

    def test_a_step_inside_the_values_is_the_rows_step_as_in_the_platform_sdk(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            pr.init(kind="train").log_metrics({"step": 7, "loss": 1.0})
        self.assertEqual(otel.opened[0].events()[0][2:4], ({"prime.step": 7}, {"loss": 1.0}))

    def test_non_finite_and_non_numeric_values_are_dropped_and_named_in_one_warning_each(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel, self.assertLogs("prime_otel", "WARNING") as logs:
            pr.init(kind="train").log_metrics({"loss": float("nan"), "kl": float("inf"), "ok": 1.0, "note": "text"}, step=1)
        self.assertEqual(otel.opened[0].events()[0][3], {"ok": 1.0})
        self.assertEqual(len(logs.output), 2)
        self.assertIn("loss, kl", logs.output[0])
        self.assertIn("note", logs.output[1])

    def test_a_call_left_with_no_values_sends_nothing(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel, self.assertLogs("prime_otel", "WARNING"):
            pr.init(kind="train").log_metrics({"loss": float("nan")}, step=1)
        self.assertEqual(otel.opened[0].events(), [])

    def test_a_step_that_is_not_an_integer_is_refused_at_the_call(self):
        for step in (1.5, "3", True):
            with self.subTest(step=step), patched({"PRIME_RUN_KEY": "k"}):
                with self.assertRaisesRegex(TypeError, "step"):
                    pr.init(kind="train").log_metrics({"loss": 1.0}, step=step)

    def test_log_is_log_metrics(self):
        self.assertIs(pr.Run.log, pr.Run.log_metrics)

    def test_an_evaluation_has_no_metric_rows_its_values_reach_the_summary(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="eval")
            run.log_metrics({"x": 1.0}, step=1)
        self.assertEqual((otel.opened[0].events(), run.summary), ([], {"x": 1.0}))

    def test_logged_values_land_in_the_summary_last_value_wins(self):
        with patched({"PRIME_RUN_KEY": "k"}):
            run = pr.init(kind="train", summary={"seed": 7, "bad": float("nan")})
            run.log_metrics({"loss": 2.0, "reward": {"mean": 0.1}}, step=1)
            run.log_metrics({"loss": 1.0}, step=2)
        self.assertEqual(run.summary, {"seed": 7, "loss": 1.0, "reward/mean": 0.1})

    def test_commit_false_stages_values_for_the_next_committed_row(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train")
            run.log_metrics({"a": 1.0}, step=4, commit=False)
            run.log_metrics({"b": 2.0})
        (_, _, attributes, body, _), = otel.opened[0].events()
        self.assertEqual((attributes, body), ({"prime.step": 4}, {"a": 1.0, "b": 2.0}))


class LogEpisodes(unittest.TestCase):
    def test_episodes_become_prime_episode_events_whose_body_is_their_json_text_made_at_the_call(self):
        native = {"traces": [{"reward": NumpyScalar(1.0)}], "run": {"work": {"step": NumpyScalar(10)}}}
        plain_map = {"prompt": "p", "reward": NumpyScalar(0.25), "info": {"ids": NumpyArray([1, 2]), "pair": (1, 2)}}
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train")
            run.log_episodes([Episode(native)])
            run.log_episodes([plain_map], step=20)
            run.log_samples(plain_map, step=NumpyScalar(30))
        events = otel.opened[0].events("prime.episode")
        self.assertEqual([e[2] for e in events], [{}, {"prime.work.step": 20}, {"prime.work.step": 30}])
        self.assertEqual(events[0][3], '{"traces":[{"reward":1.0}],"run":{"work":{"step":10}}}')
        self.assertEqual(json.loads(events[1][3]), {"prompt": "p", "reward": 0.25, "info": {"ids": [1, 2], "pair": [1, 2]}})

    def test_an_episode_changed_after_the_call_is_sent_as_it_was_at_the_call(self):
        episode = {"prompt": "p", "reward": 1.0}
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            pr.init(kind="train").log_episodes([episode], step=0)
            episode["reward"] = 0.0
        self.assertEqual(json.loads(otel.opened[0].events()[0][3])["reward"], 1.0)

    def test_something_that_is_neither_an_episode_nor_a_mapping_is_skipped_and_named(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel, self.assertLogs("prime_otel", "WARNING") as logs:
            pr.init(kind="train").log_episodes([42, {"prompt": "ok"}], step=0)
        self.assertEqual(len(otel.opened[0].events()), 1)
        self.assertIn("int", logs.output[0])

    def test_traces_and_samples_are_aliases(self):
        self.assertIs(pr.Run.log_traces, pr.Run.log_episodes)
        self.assertIs(pr.Run.log_samples, pr.Run.log_episodes)

    def test_an_evaluations_samples_carry_no_step(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            pr.init(kind="eval").log_episodes([{"sample_id": 1}], step=5)
        self.assertEqual(otel.opened[0].events()[0][2], {})


class NonFiniteInAnEpisode(unittest.TestCase):
    EPISODES = [{"prompt": "fine"}, {"trajectory": [{"logprobs": [-0.1, float("nan")]}], "reward": float("inf"), "n": NumpyScalar(float("-inf"))}]

    def test_a_nan_inside_an_episode_raises_value_error_under_raise_naming_where_it_is(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train", on_error="raise")
            with self.assertRaises(ValueError) as raised:
                run.log_episodes(self.EPISODES, step=3)
        self.assertIn("run k: episode 1 of a log_episodes() call holds NaN or Infinity at trajectory[0].logprobs[1], reward, n", str(raised.exception))
        self.assertIn("nothing of the call was sent", str(raised.exception))
        self.assertEqual(otel.opened[0].events("prime.episode"), [])  # not even the fine episode before it
        self.assertEqual(len(run.errors), 1)  # as prime_runs notes a failure it raises

    def test_under_warn_a_nan_inside_an_episode_is_sent_as_null_with_a_warning_and_an_entry_in_run_errors(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel, self.assertLogs("prime_otel", "WARNING") as logs:
            run = pr.init(kind="train")
            run.log_episodes(self.EPISODES, step=3)
        bodies = [json.loads(e[3]) for e in otel.opened[0].events("prime.episode")]
        self.assertEqual(bodies[1], {"trajectory": [{"logprobs": [-0.1, None]}], "reward": None, "n": None})
        self.assertEqual(len(bodies), 2)
        self.assertIn("episode 1 of a log_episodes() call holds NaN or Infinity at trajectory[0].logprobs[1], reward, n; sent as null", logs.output[0])
        self.assertEqual(run.errors, ["run k: episode 1 of a log_episodes() call holds NaN or Infinity at trajectory[0].logprobs[1], reward, n; sent as null"])

    def test_a_long_list_of_places_is_cut_to_five_and_counted(self):
        with patched({"PRIME_RUN_KEY": "k"}), self.assertLogs("prime_otel", "WARNING"):
            run = pr.init(kind="train")
            run.log_episodes([{"x": [float("nan")] * 8}], step=0)
        self.assertIn("x[0], x[1], x[2], x[3], x[4] and 3 more", run.errors[0])


class RefusedForGood(unittest.TestCase):
    """What the delivery thread hears when the collector refuses records for
    good (FakePipeline.refuse stands in for it), as prime_runs reports a sink's failure."""

    def test_a_refusal_reaches_run_errors_and_nothing_raises_under_warn(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train")
            otel.opened[0].refuse(2, 400, "the collector at http://c/v1/logs refused 2 record(s) for good: answered 400: bad_body")
            self.assertTrue(run.flush(timeout=1))
            run.finish()
        self.assertEqual(run.errors, ["run k: the collector at http://c/v1/logs refused 2 record(s) for good: answered 400: bad_body"])
        self.assertEqual(run.failed_records, {"collector": 2})

    def test_under_raise_the_first_refusal_is_raised_at_the_next_flush_once(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train", on_error="raise")
            otel.opened[0].refuse(1, 400, "refused 1 record(s) for good: answered 400: bad_body")
            otel.opened[0].refuse(1, 400, "refused 1 record(s) for good: answered 400: the second")
            with self.assertRaises(pr.APIError) as raised:
                run.flush(timeout=1)
            self.assertTrue(run.flush(timeout=1))  # raised once
            run.finish()
        exc = raised.exception
        self.assertEqual((exc.status_code, exc.code), (400, "collector_rejected_records"))
        self.assertEqual(str(exc), "run k: refused 1 record(s) for good: answered 400: bad_body")
        self.assertEqual(len(run.errors), 2)

    def test_under_raise_a_partial_success_is_raised_at_finish_after_the_run_has_ended(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train", on_error="raise")
            otel.opened[0].refuse(3, None, "refused 3 record(s) for good: answered 200 rejecting 3 record(s)")
            with self.assertRaises(pr.APIError) as raised:
                run.finish()
        self.assertEqual(raised.exception.status_code, None)
        self.assertTrue(run.finished)
        self.assertEqual(len(otel.opened[0].events("prime.run.end")), 1)

    def test_a_400_from_a_real_connection_reaches_run_errors_and_raises_at_flush_under_raise(self):
        collector = Collector()
        self.addCleanup(collector.close)
        collector.logs_status, collector.logs_body = 400, b"bad_body: the body is not a JSON object"
        pipeline = WirePipeline(collector.url)
        with patched({"PRIME_RUN_KEY": "k"}) as otel, mock.patch.object(otel, "open_pipeline", lambda *a, **k: pipeline):
            run = pr.init(kind="train", on_error="raise")
        with self.assertLogs("prime_otel", "WARNING"):
            run.log_episodes([{"prompt": "p"}], step=1)
            with self.assertRaises(pr.APIError) as raised:
                run.flush(timeout=5)
        self.assertIn("refused 1 record(s) for good: answered 400: bad_body: the body is not a JSON object", str(raised.exception))
        self.assertEqual(run.errors, [str(raised.exception)])
        run._on_error = "warn"
        collector.logs_status = 200
        run.finish(timeout=5)


class Finish(unittest.TestCase):
    def test_finish_queues_the_end_after_every_event_then_flushes_and_shuts_down(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train")
            run.log_metrics({"loss": 1.0}, step=1)
            run.finish()
            run.finish(status="failed")  # idempotent: the first status counts
        log = otel.opened[0].log
        self.assertEqual([e[0] if e[0] != "emit" else e[1] for e in log],
                         ["prime.metrics", "prime.run.end", "flush", "shutdown"])
        self.assertEqual(log[1][2], {"prime.run.status": "completed"})
        self.assertEqual(run.status, pr.RunStatus.COMPLETED)
        otel.atexit.unregister.assert_called_once()

    def test_each_way_of_ending_sends_its_status_and_reason(self):
        def failed(run):
            run.fail(ValueError("bad reward"))

        def raised(run):
            with run:
                raise RuntimeError("boom")

        def interrupted(run):
            with run:
                raise KeyboardInterrupt

        def exited(run):
            with self.assertLogs("prime_otel", "WARNING") as logs:
                run._on_process_exit()
            self.assertIn("reporting it as crashed", logs.output[0])

        def clean(run):
            with run:
                pass

        cases = [
            (failed, {"prime.run.status": "failed", "prime.run.error": "ValueError: bad reward"}),
            (raised, {"prime.run.status": "failed", "prime.run.error": "RuntimeError: boom"}),
            # prime_runs reports Ctrl-C as crashed, not failed: stopped from outside.
            (interrupted, {"prime.run.status": "crashed", "prime.run.error": "interrupted"}),
            (exited, {"prime.run.status": "crashed", "prime.run.error": "process exited without finishing the run"}),
            (clean, {"prime.run.status": "completed"}),
        ]
        for end, want in cases:
            with self.subTest(end=end.__name__), patched({"PRIME_RUN_KEY": "k"}) as otel:
                run = pr.init(kind="train")
                try:
                    end(run)
                except (RuntimeError, KeyboardInterrupt):
                    pass
                self.assertEqual(otel.opened[0].events("prime.run.end")[0][2], want)

    def test_only_rank_0_ends_the_run_the_others_just_flush(self):
        with patched({"PRIME_RUN_KEY": "k", "RANK": "2"}) as otel:
            run = pr.init(kind="train")
            run.log_metrics({"loss": 1.0}, step=1)
            run._on_process_exit()
        self.assertEqual(otel.opened[0].events("prime.run.end"), [])
        self.assertEqual(otel.opened[0].log[-2:], [("flush",), ("shutdown",)])

    def test_a_forked_child_keeps_logging_into_the_run_but_never_ends_it(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train")
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: report what it emitted through the pipe, then leave at once
                run.log_metrics({"child": 1.0}, step=1)
                run.finish()
                os.write(write, ",".join(e[1] for e in otel.opened[0].events()).encode())
                os._exit(0)
            os.close(write)
            _, status = os.waitpid(pid, 0)
            child_events = os.read(read, 4096).decode()
            os.close(read)
            run.finish()
        self.assertEqual(status, 0)
        self.assertEqual(child_events, "prime.metrics")
        self.assertEqual([e[1] for e in otel.opened[0].events()], ["prime.run.end"])

    def test_an_evaluations_summary_is_sent_flattened_before_the_end(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel, self.assertLogs("prime_otel", "WARNING") as logs:
            run = pr.init(kind="eval")
            run.update_summary({"avg_error": 0.0})
            run.finish(summary={"avg_reward": NumpyScalar(0.5), "avg_metrics": {"acc": 0.75}, "label": "x", "bad": float("nan")})
        self.assertIn("label", logs.output[0])
        self.assertNotIn("bad", run.summary)  # NaN is dropped from the summary, as prime_runs drops it
        metrics, end = otel.opened[0].events()
        self.assertEqual(metrics[1:4], ("prime.metrics", {}, {"avg_error": 0.0, "avg_reward": 0.5, "avg_metrics/acc": 0.75}))
        self.assertEqual(end[1], "prime.run.end")

    def test_logging_after_finish_is_refused(self):
        with patched({"PRIME_RUN_KEY": "k"}):
            run = pr.init(kind="train")
            run.finish()
            with self.assertRaises(pr.RunFinishedError):
                run.log_metrics({"x": 1.0}, step=1)

    def test_under_on_error_raise_an_undelivered_flush_raises_at_finish(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train", on_error="raise")
            otel.opened[0].flush_ok = False
            with self.assertRaisesRegex(pr.DeliveryError, r"3 records did not reach the collector .*2 episodes, the end event.*connection refused") as raised:
                run.finish()
        self.assertTrue(run.finished)
        self.assertEqual(raised.exception.undelivered, 3)

    def test_an_undelivered_flush_warns_and_says_false_under_warn(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel, self.assertLogs("prime_otel", "WARNING") as logs:
            run = pr.init(kind="train")
            otel.opened[0].flush_ok = False
            self.assertFalse(run.flush(timeout=1))
        self.assertIn("3 records did not reach the collector within 1 s of flush()", logs.output[0])


class AKeyTheCollectorStopsLettingIn(unittest.TestCase):
    """A run whose key the collector (tests/collector.py with ``key``) takes at
    first and then refuses, as a gateway does once the platform revokes it."""

    def setUp(self):
        self.collector = Collector(key=KEY)
        self.addCleanup(self.collector.close)
        self.lines = []
        handler = logging.Handler(logging.DEBUG)
        handler.emit = lambda record: self.lines.append(handler.format(record))
        log = logging.getLogger("prime_otel")
        log.addHandler(handler)
        self.addCleanup(log.removeHandler, handler)

    def start(self, on_error):
        (credentials,) = _auth.for_collector([self.collector.url], api_key=None, environ={"PRIME_API_KEY": KEY})
        pipeline = WirePipeline(self.collector.url, credentials, batch_records=1)
        with patched({"PRIME_RUN_KEY": "k"}) as otel, mock.patch.object(otel, "open_pipeline", lambda *a, **k: pipeline):
            run = pr.init(kind="train", on_error=on_error)
        run.log_metrics({"loss": 1.0}, step=1)
        self.assertTrue(run.flush(timeout=5))
        self.collector.key = "the-key-after-the-revocation"
        for step in (2, 3, 4):
            run.log_metrics({"loss": 1.0}, step=step)
        return run

    def test_each_refused_batch_is_sent_once_counted_as_failed_and_said_in_one_warning(self):
        run = self.start("warn")
        run.finish(timeout=5)
        answered = [r.get("answered") for r in self.collector.posts()]
        self.assertEqual(answered, [200, 401, 401, 401, 401])  # three rows and the end, one request each: none sent again
        self.assertEqual(run.failed_records, {"collector": 4})
        refusals = [line for line in self.lines if "refused the key" in line]
        self.assertEqual(len(refusals), 1, self.lines)
        self.assertIn(f"the collector at {self.collector.url}/v1/logs refused the key from PRIME_API_KEY (401)", refusals[0])
        self.assertIn("refused the key from PRIME_API_KEY", run.errors[0])
        self.assertTrue(all(KEY not in line for line in self.lines + run.errors))

    def test_under_on_error_raise_finish_raises_unauthorized_naming_the_keys_setting_and_never_the_key(self):
        run = self.start("raise")
        with self.assertRaises(pr.UnauthorizedError) as raised:
            run.finish(timeout=5)
        exc = raised.exception
        self.assertTrue(run.finished)
        self.assertEqual((exc.status_code, exc.code), (401, "collector_refused_key"))
        self.assertRegex(str(exc), r"run k: the collector at .*/v1/logs refused the key from PRIME_API_KEY \(401\): "
                                   r"authentication didn't succeed: '\[REDACTED\]' .*; 4 records were refused for good by the time of finish\(\)")
        for text in [str(exc), repr(exc), "".join(traceback.format_exception(exc)), *self.lines]:
            self.assertNotIn(KEY, text)

    def test_under_on_error_raise_flush_raises_it_too(self):
        run = self.start("raise")
        with self.assertRaises(pr.UnauthorizedError):
            run.flush(timeout=5)
        run._on_error = "warn"  # let the test's own finish() pass quietly
        run.finish(timeout=5)


if __name__ == "__main__":
    unittest.main()
