"""An evaluation runner that puts its evaluation on the Prime Intellect platform through
a collector with the prime exporter, using the OpenTelemetry Python SDK (>= 1.39).

This is the Python counterpart of cmd/evalrunner (illustrative; not run in CI). A resource
with prime.run.kind=eval becomes a platform evaluation:
  - every prime.episode record is one sample: its body is the verifiers native document,
    episode.to_record(), sent as a dict (a map body);
  - a prime.metrics event sets summary keys (the last value wins; a name avg_metrics/<k>
    nests as avg_metrics.<k>); avg_reward, avg_metrics and avg_error are computed from the
    episodes when not given;
  - prime.run.end closes the evaluation: completed finalizes it, anything else marks it
    failed (an attached, hosted evaluation's launcher reports failures itself).

Run it with the collector's OTLP/HTTP endpoint:
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 PRIME_EVAL_KEY=gsm8k-nightly-7 python3 evals-python.py
In a hosted evaluation, $EVALUATION_ID names the evaluation to attach to instead.

    pip install 'opentelemetry-sdk>=1.39' 'opentelemetry-exporter-otlp-proto-http>=1.39' verifiers
"""

import json
import os
import time

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource

MODEL = "Qwen/Qwen3-4B"
# owner/name is a hub slug, anything else a name; @version pins a version.
ENVIRONMENTS = ["primeintellect/gsm8k", "primeintellect/vf-math@v3"]
EVAL_CONFIG = {
    "num_examples": 25,
    "rollouts_per_example": 2,
    "sampling": {"temperature": 1.0, "max_tokens": 512},
}


def eval_resource():
    """The evaluation, described as the exporter reads it (docs/evals.md, "What to send")."""
    attributes = {
        "prime.run.kind": "eval",
        "prime.run.model": MODEL,
        "prime.run.environments": ENVIRONMENTS,
        # A resource attribute cannot be a dict (the SDK drops it): send JSON text.
        "prime.run.config": json.dumps(EVAL_CONFIG),
        "prime.eval.tags": ["nightly", "qwen3"],
        "prime.eval.framework": "verifiers",
        "prime.eval.description": "nightly gsm8k and vf-math regression eval",
    }
    # Which evaluation: attach to a hosted one, or name one to create. Every process of
    # one evaluation sets the same key (the SDK adds a random service.instance.id, which
    # would otherwise make one evaluation per process).
    if os.environ.get("EVALUATION_ID"):
        attributes["prime.run.id"] = os.environ["EVALUATION_ID"]
    else:
        attributes["prime.run.key"] = os.environ["PRIME_EVAL_KEY"]
        attributes["prime.run.name"] = os.environ.get("PRIME_EVAL_NAME", "gsm8k-nightly")
    if os.environ.get("PRIME_TEAM_ID"):
        attributes["prime.run.team_id"] = os.environ["PRIME_TEAM_ID"]
    return Resource.create(attributes)


def run_rollouts():
    """Stands in for the eval loop (verifiers' eval CLI): yields each finished
    verifiers Episode, its run stamped {"type": "eval", "id": <this runner's id>}.
    Replace it with your environments' rollouts."""
    raise NotImplementedError("plug the evaluation's rollouts in here")
    yield  # makes this a generator


def user_summary(records):
    """The runner's own summary keys. Values must be plain Python numbers: numpy
    scalars reach the collector as strings (python.md section 3)."""
    scored = [r for r in records if r["ok"]]
    correct = sum(
        1 for r in scored
        if (r["traces"][0]["rewards"].get("correct_answer") or {}).get("score") == 1.0
    )
    latencies = [
        r["traces"][0]["metrics"]["judge_latency"] for r in scored
        if r["traces"][0]["metrics"].get("judge_latency") is not None
    ]
    summary = {"num_examples": len({r["task"]["data"].get("idx") for r in records})}
    if records:
        summary["accuracy"] = correct / len(records)
    if latencies:
        summary["avg_metrics/judge_latency"] = sum(latencies) / len(latencies)
    return summary


def main():
    logger_provider = LoggerProvider(resource=eval_resource())
    # Episode documents are large: keep one export under the receiver's
    # max_request_body_size (20 MiB by default), and let the queue hold them all.
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(
        OTLPLogExporter(), max_export_batch_size=16, max_queue_size=16384))
    events = logger_provider.get_logger("evalrunner")

    records = []
    end = {"prime.run.status": "completed"}
    try:
        for episode in run_rollouts():
            record = episode.to_record()
            records.append(record)
            # No prime.work.step: an evaluation has no steps, and every episode is a
            # sample. The timestamp is the sample's created_at, and lets the exporter
            # recognise a replayed episode.
            events.emit(event_name="prime.episode", timestamp=time.time_ns(), body=record)
    except KeyboardInterrupt:
        end = {"prime.run.status": "cancelled", "prime.run.error": "interrupted"}
        raise
    except Exception as exc:
        end = {"prime.run.status": "failed", "prime.run.error": f"{type(exc).__name__}: {exc}"}
        raise
    finally:
        # The summary of what was evaluated, as a dict body of name -> number.
        events.emit(event_name="prime.metrics", timestamp=time.time_ns(), body=user_summary(records))
        # Every episode and the summary leave before the end event: the evaluation
        # refuses data once it is closed out.
        if not logger_provider.force_flush():
            print("evalrunner: the episodes were not all exported before the end event")
        events.emit(event_name="prime.run.end", timestamp=time.time_ns(), attributes=end)
        logger_provider.shutdown()


if __name__ == "__main__":
    main()
