"""Drives prime_otel.prime_rl.OtelMonitor the way prime-rl's orchestrator drives
its monitors (prime_rl.monitors: init(config=...), log(metrics, step),
log_metrics(metrics, step=None) for inference metrics, log(episodes, step,
kind, subset) for each cohort, finalize()), with numpy values where a trainer
has them: numpy scalars among the metrics and an np.float32 inside every
episode document."""

import asyncio
import types

import numpy as np

from episodes import Episode
from prime_otel.prime_rl import OtelMonitor


def orchestrator_config():
    config = types.SimpleNamespace(
        model=types.SimpleNamespace(name="Qwen/Qwen3-0.6B"),
        train=types.SimpleNamespace(source=[types.SimpleNamespace(env_id="gsm8k")]),
        max_steps=30, batch_size=8, group_size=4, seq_len=2048,
    )
    config.model_dump = lambda **_: {"max_steps": 30, "batch_size": 8}
    return config


async def main():
    monitor = OtelMonitor(types.SimpleNamespace(name="prime-rl-otel"))
    await monitor.init(config=orchestrator_config())
    for step in range(1, 31):
        await monitor.log({"loss": np.float32(1.0 / step), "reward/mean": np.float64(0.5), "step_time": 1.5}, step=step)
        await monitor.log_metrics({"inference/throughput": np.float32(100 + step)}, step=None)
        episodes = [Episode(step, i, float(i % 2), extra_metrics={"judge_score": np.float32(0.25)}) for i in range(4)]
        await monitor.log(episodes, step=step, kind="train", subset="effective")
        await monitor.log(episodes, step=step, kind="train", subset="all")
        await monitor.log(episodes[:1], step=step, kind="eval", subset="effective")
        await monitor.log_live({"phase": "rollout"}, step=step)
    await monitor.finalize()


asyncio.run(main())
