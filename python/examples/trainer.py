"""A trainer written against the platform SDK's training API (prime_runs).
Only the import differs: the collector holds the API key and talks to the platform.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 PRIME_RUN_KEY=my-run-1 python3 trainer.py
"""

import random

import prime_otel as pr  # was: import prime_runs as pr
from episodes import Episode

run = pr.init(kind="train", name="gsm8k-demo", model="Qwen/Qwen3-0.6B", environments=["gsm8k"],
              training=pr.TrainingSpec(max_steps=20, batch_size=4, rollouts_per_example=4, seq_len=2048),
              config={"lr": 1e-6, "seed": 7})
with run:
    for step in range(1, 21):
        rewards = [float(random.random() < 0.5) for _ in range(4)]
        run.log_metrics({"loss": 1.0 / step, "reward/mean": sum(rewards) / 4}, step=step)
        run.log_metrics({"inference/tokens_per_s": 900.0 + step})  # no step: a time-keyed row
        run.log_episodes([Episode(step, i, r) for i, r in enumerate(rewards)])
