"""prime_otel: the ``prime_runs`` API for Python trainers, sent over OTLP to an
OpenTelemetry Collector with the prime exporter.

    import prime_otel as pr

    run = pr.init(kind="train", model="Qwen/Qwen3-0.6B", environments=["gsm8k"])
    print(run.url)
    for step in range(steps):
        run.log_metrics({"loss": loss, "reward/mean": reward}, step=step)
        run.log_episodes(episodes, step=step)
    run.finish()

A trainer written for ``prime_runs`` changes only its import.
"""

__version__ = "0.1.0"

from . import metrics, values
from .errors import (
    APIError,
    APITimeoutError,
    ConfigurationError,
    DeliveryError,
    EnvironmentResolutionError,
    ForbiddenError,
    NotFoundError,
    PaymentRequiredError,
    PrimeRunsError,
    RetryableAPIError,
    RunFinishedError,
    TransportError,
    UnauthorizedError,
    is_transient,
)
from .models import CONFIG_SOURCE_KEY, ConfigSource, EnvironmentRef, RunKind, RunStatus, TrainingSpec
from .run import Run
from .start import MODE_ENV, init

__all__ = [
    "init",
    "Run",
    "RunStatus",
    "RunKind",
    "TrainingSpec",
    "ConfigSource",
    "CONFIG_SOURCE_KEY",
    "EnvironmentRef",
    "MODE_ENV",
    "PrimeRunsError",
    "ConfigurationError",
    "EnvironmentResolutionError",
    "RunFinishedError",
    "DeliveryError",
    "APIError",
    "APITimeoutError",
    "ForbiddenError",
    "NotFoundError",
    "PaymentRequiredError",
    "RetryableAPIError",
    "TransportError",
    "UnauthorizedError",
    "is_transient",
    "metrics",
    "values",
]
