"""The queue between the trainer's calls and the collector, driven by a fake
collector that refuses connections, stalls, refuses records and recovers."""

import os
import threading
import time
import unittest

from prime_otel import _delivery
from prime_otel._transport import Outcome


class FakeCollector:
    """``send`` for a Delivery. ``down`` makes every request fail as a refused
    connection would; ``stall`` holds a request until released or its timeout;
    ``refuse`` answers with a final 400; ``reject`` a partial success."""

    def __init__(self):
        self.lock = threading.Lock()
        self.down = False
        self.stall = False
        self.refuse = False
        self.reject = 0
        self.retry_after = None
        self.received = []  # the records of every request it took, in order
        self.attempts = 0
        self.timeouts = []
        self.released = threading.Event()

    def send(self, items, timeout):
        with self.lock:
            self.attempts += 1
            self.timeouts.append(timeout)
            down, stall, refuse, reject = self.down, self.stall, self.refuse, self.reject
        if stall:
            if not self.released.wait(timeout):
                return Outcome(False, retry=True, error=f"no answer within {timeout:.1f}s")
        if down:
            return Outcome(False, retry=True, retry_after=self.retry_after, error="connection refused (is the collector running?)")
        if refuse:
            return Outcome(False, retry=False, status=400, error="answered 400: bad request")
        with self.lock:
            self.received.append([item.record for item in items])
        return Outcome(True, rejected=reject)

    def records(self):
        with self.lock:
            return [r for batch in self.received for r in batch]


def delivery(collector, **options):
    """A queue that sends as soon as it has a record (``linger`` 0), unless
    a test asks otherwise: the linger has tests of its own (``Linger``)."""
    options.setdefault("backoff_first", 0.01)
    options.setdefault("backoff_max", 0.05)
    options.setdefault("linger", 0.0)
    return _delivery.Delivery(collector.send, **options)


class Delivered(unittest.TestCase):
    def test_records_reach_the_collector_in_the_order_they_were_put(self):
        c = FakeCollector()
        d = delivery(c, batch_records=3)
        for i in range(10):
            d.put(i, 10, "prime.metrics")
        self.assertTrue(d.flush(5).delivered)
        self.assertEqual(c.records(), list(range(10)))
        self.assertTrue(all(len(b) <= 3 for b in c.received))
        self.assertEqual((d.delivered, d.dropped, d.failed), (10, 0, 0))
        d.close()

    def test_a_batch_is_cut_so_no_request_outgrows_the_byte_limit(self):
        c = FakeCollector()
        c.down = True  # hold everything until all is queued, so batches form as they would under load
        d = delivery(c, batch_bytes=1000)
        for i in range(10):
            d.put(i, 400, "prime.episode")
        d.put("big", 5000, "prime.episode")
        c.down = False
        self.assertTrue(d.flush(5).delivered)
        self.assertEqual([len(b) for b in c.received], [2, 2, 2, 2, 2, 1])
        d.close()


class CollectorDown(unittest.TestCase):
    def test_a_collector_absent_at_start_loses_nothing_once_it_comes(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c)
        with self.assertLogs("prime_otel", "WARNING") as logs:
            for i in range(50):
                d.put(i, 100, "prime.episode")
            time.sleep(0.2)
            self.assertGreater(c.attempts, 2)  # it kept trying
            self.assertEqual(c.records(), [])
            c.down = False
            self.assertTrue(d.flush(5).delivered)
        self.assertEqual(c.records(), list(range(50)))
        self.assertIn("did not take a request (connection refused", logs.output[0])
        self.assertIn("answers again after", logs.output[-1])
        d.close()

    def test_a_collector_restarted_mid_run_loses_nothing(self):
        c = FakeCollector()
        d = delivery(c)
        for i in range(20):
            d.put(i, 100, "prime.metrics")
        self.assertTrue(d.flush(5).delivered)
        c.down = True
        with self.assertLogs("prime_otel", "WARNING"):
            for i in range(20, 40):
                d.put(i, 100, "prime.metrics")
            time.sleep(0.1)
            c.down = False
            self.assertTrue(d.flush(5).delivered)
        self.assertEqual(c.records(), list(range(40)))
        d.close()

    def test_retry_after_is_honoured(self):
        c = FakeCollector()
        c.down, c.retry_after = True, 10.0
        d = delivery(c)
        with self.assertLogs("prime_otel", "WARNING"):
            d.put(1, 10, "prime.metrics")
            time.sleep(0.2)
        self.assertEqual(c.attempts, 1)  # waiting out the server's 10 s
        d.close()


class Bounded(unittest.TestCase):
    def test_past_the_byte_bound_new_records_are_dropped_counted_and_warned_about_once(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c, max_bytes=1000)
        with self.assertLogs("prime_otel", "WARNING") as logs:
            kept = [d.put(i, 300, "prime.episode") for i in range(6)]
        self.assertEqual(kept, [True, True, True, False, False, False])
        self.assertEqual(d.dropped, 3)
        self.assertEqual(sum("queue to the collector is full" in line for line in logs.output), 1)
        c.down = False
        self.assertTrue(d.flush(5).delivered)
        self.assertEqual(c.records(), [0, 1, 2])
        d.close()

    def test_a_record_bound_works_beside_the_byte_bound(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c, max_records=2)
        with self.assertLogs("prime_otel", "WARNING"):
            self.assertEqual([d.put(i, 1, "x") for i in range(3)], [True, True, False])
        d.close()

    def test_the_start_and_end_events_are_never_dropped(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c, max_bytes=100)
        with self.assertLogs("prime_otel", "WARNING"):
            d.put("episode", 90, "prime.episode")
            self.assertFalse(d.put("another", 90, "prime.episode"))
            self.assertTrue(d.put("end", 60, "prime.run.end", essential=True))
        c.down = False
        self.assertTrue(d.flush(5).delivered)
        self.assertEqual(c.records(), ["episode", "end"])
        d.close()


class Refused(unittest.TestCase):
    def test_a_final_refusal_counts_the_batch_as_failed_and_moves_on(self):
        c = FakeCollector()
        c.refuse = True
        d = delivery(c)
        with self.assertLogs("prime_otel", "WARNING") as logs:
            d.put(1, 10, "prime.episode")
            result = d.flush(5)
        self.assertTrue(result.delivered)  # nothing waits: it was answered
        self.assertEqual((d.delivered, d.failed), (0, 1))
        self.assertIn("refused 1 records for good", logs.output[0])
        c.refuse = False
        d.put(2, 10, "prime.episode")
        self.assertTrue(d.flush(5).delivered)
        self.assertEqual(c.records(), [2])
        d.close()

    def test_a_partial_success_counts_the_rejected_records_as_failed(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c)
        for i in range(4):
            d.put(i, 10, "prime.episode")
        c.reject, c.down = 1, False
        with self.assertLogs("prime_otel", "WARNING"):
            self.assertTrue(d.flush(5).delivered)
        self.assertEqual((d.delivered, d.failed), (3, 1))
        d.close()

    def test_a_final_refusal_is_handed_to_the_listener_with_its_status_and_reason(self):
        c = FakeCollector()
        c.refuse = True
        heard = []
        d = delivery(c, on_refusal=heard.append, where="the collector at http://c/v1/logs")
        with self.assertLogs("prime_otel", "WARNING"):
            d.put(1, 10, "prime.episode")
            d.put(2, 10, "prime.episode")
            d.flush(5)
        self.assertEqual(len(heard), 1)
        self.assertEqual((heard[0].records, heard[0].status), (2, 400))
        self.assertEqual(heard[0].message, "the collector at http://c/v1/logs refused 2 record(s) for good: answered 400: bad request")
        d.close()

    def test_a_partial_success_is_handed_to_the_listener_with_the_rejected_count(self):
        c = FakeCollector()
        c.down = True
        heard = []
        d = delivery(c, on_refusal=heard.append)
        for i in range(3):
            d.put(i, 10, "prime.episode")
        c.reject, c.down = 2, False
        with self.assertLogs("prime_otel", "WARNING"):
            self.assertTrue(d.flush(5).delivered)
        self.assertEqual([r.records for r in heard], [2])
        self.assertIn("rejected 2 of 3 records", heard[0].message)
        d.close()

    def test_a_refused_key_is_not_handed_to_the_listener_it_has_its_own_path(self):
        heard = []

        def send(items, timeout):
            return Outcome(False, retry=False, status=401, error="refused the key", refused_key=True)

        d = _delivery.Delivery(send, linger=0, on_refusal=heard.append)
        with self.assertLogs("prime_otel", "WARNING"):
            d.put(1, 10, "x")
            d.flush(5)
        self.assertEqual(heard, [])
        self.assertEqual(d.key_refusal.status, 401)
        d.close()

    def test_a_batch_that_cannot_be_encoded_is_refused_and_the_worker_goes_on(self):
        sent = []

        def send(items, timeout):
            if any(item.record == "bad" for item in items):
                raise ValueError("Out of range float values are not JSON compliant")
            sent.extend(item.record for item in items)
            return Outcome(True)

        heard = []
        d = _delivery.Delivery(send, linger=0, on_refusal=heard.append)
        with self.assertLogs("prime_otel", "WARNING"):
            d.put("bad", 10, "x")
            self.assertTrue(d.flush(5).delivered)
        d.put("good", 10, "x")
        self.assertTrue(d.flush(5).delivered)
        self.assertEqual(sent, ["good"])
        self.assertEqual(d.failed, 1)
        self.assertIn("could not be sent: ValueError", heard[0].message)
        d.close()


class Linger(unittest.TestCase):
    def test_records_wait_up_to_the_linger_to_share_one_request(self):
        c = FakeCollector()
        d = delivery(c, linger=0.4)
        for i in range(3):
            d.put(i, 10, "prime.episode")
        time.sleep(0.15)
        self.assertEqual(c.attempts, 0)  # still lingering
        deadline = time.monotonic() + 3
        while not c.received and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(c.received, [[0, 1, 2]])
        d.close()

    def test_a_full_batch_is_sent_without_waiting_out_the_linger(self):
        c = FakeCollector()
        d = delivery(c, linger=30, batch_records=3)
        for i in range(4):
            d.put(i, 10, "prime.episode")
        deadline = time.monotonic() + 3
        while not c.received and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(c.received, [[0, 1, 2]])  # the fourth waits for company
        d.close()

    def test_a_batch_full_by_bytes_is_sent_without_waiting_out_the_linger(self):
        c = FakeCollector()
        d = delivery(c, linger=30, batch_bytes=1000)
        d.put("small", 10, "prime.episode")
        d.put("big", 990, "prime.episode")
        deadline = time.monotonic() + 3
        while not c.received and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(c.records(), ["small", "big"])
        d.close()

    def test_a_flush_sends_at_once_without_waiting_out_the_linger(self):
        c = FakeCollector()
        d = delivery(c, linger=30)
        d.put(1, 10, "prime.metrics")
        d.put("end", 10, "prime.run.end", essential=True)
        started = time.monotonic()
        self.assertTrue(d.flush(5).delivered)
        self.assertLess(time.monotonic() - started, 2)
        self.assertEqual(c.received, [[1, "end"]])
        d.close()


class Budget(unittest.TestCase):
    def test_a_flush_with_no_collector_returns_by_its_deadline_naming_what_waits(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c)
        with self.assertLogs("prime_otel", "WARNING"):
            for i in range(3):
                d.put(i, 10, "prime.episode")
            d.put("end", 10, "prime.run.end", essential=True)
            started = time.monotonic()
            result = d.flush(0.5)
        took = time.monotonic() - started
        self.assertFalse(result.delivered)
        self.assertEqual((result.undelivered, result.by_kind), (4, {"prime.episode": 3, "prime.run.end": 1}))
        self.assertIn("connection refused", result.last_error)
        self.assertLess(took, 1.5)
        d.close()

    def test_a_request_sent_during_a_flush_is_given_no_more_than_what_is_left_of_its_budget(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c, request_timeout=30)
        with self.assertLogs("prime_otel", "WARNING"):
            d.put(1, 10, "prime.episode")
            time.sleep(0.05)  # refused once, with the full timeout; now in backoff
            with c.lock:
                c.stall, c.down = True, False
                before = c.attempts
            started = time.monotonic()
            result = d.flush(0.5)
            took = time.monotonic() - started
            c.released.set()
            self.assertTrue(d.flush(5).delivered)
        self.assertFalse(result.delivered)
        self.assertLess(took, 1.5)
        self.assertEqual(c.timeouts[0], 30)
        self.assertLessEqual(c.timeouts[before], 0.5)
        d.close()

    def test_a_flush_waits_only_for_what_was_queued_before_it(self):
        c = FakeCollector()
        d = delivery(c)
        d.put(1, 10, "x")
        stop = threading.Event()

        def producer():
            i = 2
            while not stop.is_set():
                d.put(i, 10, "x")
                i += 1

        t = threading.Thread(target=producer)
        t.start()
        try:
            self.assertTrue(d.flush(5).delivered)
        finally:
            stop.set()
            t.join()
        d.close()

    def test_a_flush_cuts_the_backoff_short(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c, backoff_first=10, backoff_max=10)
        with self.assertLogs("prime_otel", "WARNING"):
            d.put(1, 10, "x")
            time.sleep(0.1)  # the worker sleeps its 10 s backoff
            c.down = False
            started = time.monotonic()
            self.assertTrue(d.flush(5).delivered)
        self.assertLess(time.monotonic() - started, 2)
        d.close()


class Fork(unittest.TestCase):
    def test_a_forked_child_gets_an_empty_queue_and_a_worker_of_its_own(self):
        c = FakeCollector()
        c.down = True
        d = delivery(c)
        with self.assertLogs("prime_otel", "WARNING"):
            d.put("parent", 10, "x")
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    pending_at_fork = d.pending()
                    c.down = False
                    c.received.clear()
                    d.put("child", 10, "x")
                    ok = d.flush(5).delivered
                    os.write(write, f"{pending_at_fork},{ok},{c.records()}".encode())
                finally:
                    os._exit(0)
            os.close(write)
            os.waitpid(pid, 0)
            said = os.read(read, 4096).decode()
            os.close(read)
            c.down = False
            self.assertTrue(d.flush(5).delivered)
        self.assertEqual(said, "0,True,['child']")
        self.assertEqual(c.records(), ["parent"])
        d.close()


class Closed(unittest.TestCase):
    def test_after_close_nothing_is_queued_and_the_worker_stops(self):
        c = FakeCollector()
        d = delivery(c)
        d.put(1, 10, "x")
        d.flush(5)
        d.close()
        self.assertFalse(d.put(2, 10, "x"))
        time.sleep(0.05)
        self.assertFalse(d._worker.is_alive())


if __name__ == "__main__":
    unittest.main()
