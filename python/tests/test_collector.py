"""The stand-in collector (tests/collector.py) keeps each request's own
answer: the tests that count what landed read it."""

import threading
import unittest
import urllib.request

from .collector import Collector


class StandInCollector(unittest.TestCase):
    def test_overlapping_requests_each_keep_their_own_answer(self):
        collector = Collector()
        self.addCleanup(collector.close)
        collector.logs_delay = 0.2  # both requests are noted before either is answered
        statuses = []

        def post(body):
            request = urllib.request.Request(collector.url + "/v1/logs", data=body, method="POST")
            with urllib.request.urlopen(request, timeout=10) as response:
                statuses.append(response.status)

        senders = [threading.Thread(target=post, args=(b"[%d]" % i,)) for i in range(2)]
        for s in senders:
            s.start()
        for s in senders:
            s.join(10)
        self.assertEqual(statuses, [200, 200])
        self.assertEqual(sorted((p["body"], p.get("answered")) for p in collector.posts()), [(b"[0]", 200), (b"[1]", 200)])


if __name__ == "__main__":
    unittest.main()
