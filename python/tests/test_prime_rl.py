import asyncio
import types
import unittest

from prime_otel.prime_rl import OtelMonitor

from .fakes import Episode, patched


def orchestrator_config():
    """The fields of prime-rl's orchestrator config that its platform monitor reads."""
    cfg = types.SimpleNamespace(
        model=types.SimpleNamespace(name="Qwen/Qwen3-0.6B"),
        train=types.SimpleNamespace(source=[types.SimpleNamespace(env_id="gsm8k")]),
        max_steps=30, batch_size=64, group_size=8, seq_len=4096,
    )
    cfg.model_dump = lambda **_: {"max_steps": 30}
    return cfg


class DrivenAsPrimeRlsOrchestratorDrivesIt(unittest.TestCase):
    def test_metrics_episodes_and_finalize_land_as_events_of_one_run(self):
        async def orchestrate(monitor):
            await monitor.init(config=orchestrator_config())
            await monitor.log({"loss": 0.5}, step=10)
            await monitor.log_metrics({"inference/tok_s": 100.0}, step=None)
            await monitor.log([Episode({"traces": []})], step=10, kind="train", subset="effective")
            await monitor.log([Episode({"traces": []})], step=10, kind="train", subset="all")
            await monitor.log([Episode({"traces": []})], step=10, kind="eval", subset="effective")
            await monitor.log_annotations({"note": "x"}, step=10)
            await monitor.log_eval_epoch(1, step=10)
            await monitor.finalize()

        with patched({"PRIME_RUN_KEY": "rl-1"}) as otel:
            asyncio.run(orchestrate(OtelMonitor(types.SimpleNamespace(name="my-run"))))
        pipeline = otel.opened[0]
        self.assertEqual(pipeline.resource["prime.run.model"], "Qwen/Qwen3-0.6B")
        self.assertEqual(pipeline.resource["prime.run.environments"], ["gsm8k"])
        self.assertEqual(pipeline.resource["prime.run.name"], "my-run")
        self.assertEqual(pipeline.resource["prime.training.rollouts_per_example"], 8)
        self.assertEqual(pipeline.resource["prime.run.config"], '{"max_steps":30}')
        self.assertEqual([(e[1], e[2]) for e in pipeline.events()], [
            ("prime.metrics", {"prime.step": 10}),
            ("prime.metrics", {}),
            ("prime.episode", {"prime.work.step": 10}),
            ("prime.run.end", {"prime.run.status": "completed"}),
        ])

    def test_an_unknown_attribute_is_still_an_error(self):
        with self.assertRaises(AttributeError):
            OtelMonitor().not_a_hook


if __name__ == "__main__":
    unittest.main()
