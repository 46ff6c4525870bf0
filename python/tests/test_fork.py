"""A forked worker's episodes land, through a connection and a queue of its
own, and the worker never ends the parent's run."""

import multiprocessing
import os
import time
import unittest
from unittest import mock

import prime_otel as pr

from .collector import Collector
from .fakes import WirePipeline, patched, sent_records


def worker(run, n):
    for i in range(n):
        run.log_episodes([{"prompt": f"from the worker {i}"}], step=10)
    # returns: multiprocessing ends the child with os._exit, past every atexit hook


class ForkedWorkers(unittest.TestCase):
    def setUp(self):
        self.collector = Collector()
        self.addCleanup(self.collector.close)

    def run_with_wire(self, **kwargs):
        pipeline = WirePipeline(self.collector.url)
        with patched({"PRIME_RUN_KEY": "k"}) as otel, mock.patch.object(otel, "open_pipeline", lambda *a, **k: pipeline):
            run = pr.init(kind="train", **kwargs)
        return run

    def test_a_multiprocessing_workers_episodes_land_and_only_the_parent_ends_the_run(self):
        run = self.run_with_wire()
        run.log_metrics({"loss": 1.0}, step=10)
        ctx = multiprocessing.get_context("fork")
        workers = [ctx.Process(target=worker, args=(run, 3)) for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
            self.assertEqual(w.exitcode, 0)
        run.finish(timeout=10)
        records = sent_records(self.collector)
        parent = os.getpid()
        episodes = [r for r in records if r["event"] == "prime.episode"]
        self.assertEqual(len(episodes), 6)
        self.assertTrue(all(r["pid"] != parent for r in episodes))
        self.assertEqual(len({r["pid"] for r in episodes}), 2)  # each worker sent its own
        ends = [r for r in records if r["event"] == "prime.run.end"]
        self.assertEqual([(r["pid"], r["attributes"]["prime.run.status"]) for r in ends], [(parent, "completed")])
        self.assertEqual(records[-1]["event"], "prime.run.end")

    def test_a_child_does_not_resend_what_the_parent_had_queued(self):
        run = self.run_with_wire()
        self.collector.logs_status = 503  # nothing leaves the parent's queue yet
        with self.assertLogs("prime_otel", "WARNING"):
            run.log_metrics({"loss": 1.0}, step=1)
            while not any(r.get("answered") == 503 for r in self.collector.posts()):
                time.sleep(0.01)  # the parent's record was refused once: it waits in the parent's queue
            pid = os.fork()
            if pid == 0:
                try:
                    run.flush(timeout=0.5)  # nothing of the parent's is in the child's queue to send
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
            self.collector.logs_status = 200
            run.finish(timeout=10)
        sent = [(r["pid"], r["body"]) for r in sent_records(self.collector) if r["event"] == "prime.metrics"]
        self.assertEqual(sent, [(os.getpid(), {"loss": 1.0})])


if __name__ == "__main__":
    unittest.main()


class Signals(unittest.TestCase):
    def test_sigterm_ends_the_run_as_crashed_and_then_terminates_the_process(self):
        import signal

        collector = Collector()
        self.addCleanup(collector.close)
        pid = os.fork()
        if pid == 0:  # a trainer of its own: it started the run, so it owns it
            try:
                pipeline = WirePipeline(collector.url)
                with patched({"PRIME_RUN_KEY": "k"}) as otel, mock.patch.object(otel, "open_pipeline", lambda *a, **k: pipeline):
                    run = pr.init(kind="train")
                run.install_signal_handlers()
                run.log_metrics({"loss": 1.0}, step=1)
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:
                os._exit(7)  # reached only if SIGTERM did not end the process
        _, status = os.waitpid(pid, 0)
        self.assertTrue(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status)
        ends = [r for r in sent_records(collector) if r["event"] == "prime.run.end"]
        self.assertEqual([r["attributes"] for r in ends], [{"prime.run.status": "crashed", "prime.run.error": "received SIGTERM"}])
