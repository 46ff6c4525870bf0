"""A trainer that dies mid-run without finishing: the exit hook reports the run crashed."""

import prime_otel as pr

run = pr.init(kind="train", model="Qwen/Qwen3-0.6B", environments=["gsm8k"])
for step in range(1, 6):
    run.log_metrics({"loss": 1.0 / step}, step=step)
raise RuntimeError("simulated OOM at step 5")
