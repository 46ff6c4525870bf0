import enum
import unittest

from prime_otel.values import flatten, plain, scalars

from .fakes import NumpyArray, NumpyScalar


class Plain(unittest.TestCase):
    def test_every_value_becomes_a_type_the_sdk_encodes(self):
        class Color(enum.IntEnum):
            RED = 1

        class Odd:
            def __str__(self):
                return "odd"

        cases = [
            (NumpyScalar(0.5), 0.5),
            (NumpyScalar(True), True),
            (NumpyArray([1, NumpyScalar(2)]), [1, 2]),
            ((1, 2), [1, 2]),
            ({1: {"a": (NumpyScalar(3),)}}, {"1": {"a": [3]}}),
            (Color.RED, 1),
            (b"\x00", b"\x00"),
            (None, None),
            (Odd(), "odd"),
            (float("nan"), float("nan")),
        ]
        for given, want in cases:
            with self.subTest(given=given):
                got = plain(given)
                if want != want:  # NaN stays NaN in a body: the exporter writes it as null
                    self.assertNotEqual(got, got)
                else:
                    self.assertEqual(got, want)
                    self.assertIs(type(got), type(want))

    def test_nested_mappings_flatten_with_slashes(self):
        self.assertEqual(flatten({"a": {"b": {"c": 1}}, "d": 2}), {"a/b/c": 1, "d": 2})

    def test_scalars_keeps_numbers_and_names_the_rest(self):
        kept, non_finite, not_numbers = scalars({"a": 1, "b": float("-inf"), "c": [1], "d": False})
        self.assertEqual((kept, non_finite, not_numbers), ({"a": 1, "d": 0}, ["b"], ["c"]))


class FromEpisodes(unittest.TestCase):
    def test_aggregates_over_trainable_traces_and_counts_failed_episodes(self):
        from types import SimpleNamespace as NS

        from prime_otel.metrics import from_episodes

        def trace(trainable, reward, score, turns):
            return NS(agent=NS(trainable=trainable), reward=reward, rewards={"correct": NS(score=score)}, metrics={"turns": turns, "none": None})

        episodes = [
            NS(ok=True, traces=[trace(True, 1.0, 1.0, 2.0), trace(False, 0.0, 0.0, 9.0)]),
            NS(ok=False, traces=[trace(True, 0.0, 0.0, 4.0)]),
        ]
        self.assertEqual(from_episodes(episodes), {"avg_reward": 0.5, "avg_metrics": {"correct": 0.5, "turns": 3.0}, "avg_error": 0.5})


if __name__ == "__main__":
    unittest.main()
