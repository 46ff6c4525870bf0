"""A trainer that starts before its collector: 20 steps over about 30 s with
no collector to take them, then the collector comes and everything lands.
Each step's events wait in prime_otel's queue until the collector takes them.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 PRIME_RUN_KEY=late-1 python3 late_collector.py
"""

import random
import time

import prime_otel as pr
from episodes import Episode

run = pr.init(kind="train", name="late-collector", model="Qwen/Qwen3-0.6B", environments=["gsm8k"],
              training=pr.TrainingSpec(max_steps=20, batch_size=4), finish_timeout=120)
with run:
    for step in range(1, 21):
        rewards = [float(random.random() < 0.5) for _ in range(4)]
        run.log_metrics({"loss": 1.0 / step, "reward/mean": sum(rewards) / 4}, step=step)
        run.log_episodes([Episode(step, i, r) for i, r in enumerate(rewards)])
        time.sleep(1.5)
print(f"dropped={run.dropped_records} failed={run.failed_records}")
