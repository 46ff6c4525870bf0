"""A minimal trainer that puts its run on the Prime Intellect platform through a
collector with the prime exporter, using the OpenTelemetry Python SDK (>= 1.39).

Run it with the collector's OTLP/HTTP endpoint and a run key from the launcher:
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 PRIME_RUN_KEY=my-run-1 python3 trainer.py
"""

import os
import random
import time

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import AggregationTemporality, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

MAX_STEPS = 20
EPISODES_PER_STEP = 4
RANK = int(os.environ.get("RANK", "0"))

# Which run: the launcher sets PRIME_RUN_KEY, the same in every rank. Without it
# each process would become a run of its own (the SDK adds a random
# service.instance.id to every resource).
resource = Resource.create({
    "prime.run.key": os.environ["PRIME_RUN_KEY"],
    "prime.run.model": "Qwen/Qwen3-0.6B",
    "prime.run.environments": ["gsm8k"],
    "prime.training.max_steps": MAX_STEPS,
})

# Delta temporality: every point is exported once, not again each interval.
delta = {
    Counter: AggregationTemporality.DELTA,
    ObservableCounter: AggregationTemporality.DELTA,
    Histogram: AggregationTemporality.DELTA,
}
meter_provider = MeterProvider(resource=resource, metric_readers=[
    PeriodicExportingMetricReader(OTLPMetricExporter(preferred_temporality=delta),
                                  export_interval_millis=10_000),
])
logger_provider = LoggerProvider(resource=resource)
logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))

loss_gauge = meter_provider.get_meter("trainer").create_gauge("loss")
logger = logger_provider.get_logger("trainer")


def train_step(step, rng):
    """Stands in for one optimizer step: its loss, and the episodes it trained on."""
    episodes = []
    for i in range(EPISODES_PER_STEP):
        a, b = rng.randint(1, 50), rng.randint(1, 50)
        question = f"What is {a}+{b}?"
        answer = str(a + b)
        said = answer if rng.random() < 0.75 else str(a + b + 1)
        messages = [
            {"role": "system", "content": "Answer with a number."},
            {"role": "user", "content": question},
            {"role": "assistant", "content": said},
        ]
        episodes.append({
            "prompt": question,
            "completion": messages[-1:],
            "trajectory": [{"messages": messages, "num_input_tokens": 12, "num_output_tokens": len(said)}],
            "answer": answer,
            "env_name": "gsm8k",
            "reward": 1.0 if said == answer else 0.0,
            "info": {"a": a, "b": b},
        })
    mean = sum(e["reward"] for e in episodes) / len(episodes)
    for e in episodes:
        e["advantage"] = e["reward"] - mean
    loss = 2.0 / (1 + step) + rng.random() * 0.01
    return loss, mean, episodes


end = {"prime.run.status": "completed"}
try:
    for step in range(1, MAX_STEPS + 1):
        rng = random.Random(step)
        loss, reward_mean, episodes = train_step(step, rng)

        loss_gauge.set(loss, {"prime.step": step})
        logger.emit(event_name="prime.metrics", attributes={
            "prime.step": step,
            "reward/mean": reward_mean,
            "num_episodes": len(episodes),
            "lr": 1e-6,
        })
        for episode in episodes:
            # prime.work.step: the step the episode was dispatched at.
            logger.emit(event_name="prime.episode", timestamp=time.time_ns(),
                        attributes={"prime.work.step": step}, body=episode)
except KeyboardInterrupt:
    end = {"prime.run.status": "cancelled", "prime.run.error": "interrupted"}
    raise
except Exception as exc:
    end = {"prime.run.status": "failed", "prime.run.error": f"{type(exc).__name__}: {exc}"}
    raise
finally:
    # The last metrics leave before the end event: the run refuses data after
    # its close-out.
    meter_provider.force_flush()
    if RANK == 0:
        logger.emit(event_name="prime.run.end", attributes=end)
    logger_provider.shutdown()
    meter_provider.shutdown()
