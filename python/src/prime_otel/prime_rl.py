"""A prime-rl monitor that sends the run through the collector.

prime-rl calls its monitors from the orchestrator (``prime_rl.monitors``):
``init(config=...)`` once, ``log_metrics(metrics, step)`` (``step=None`` for
time-keyed inference metrics), ``log_episodes(episodes, step, kind, subset)``
and ``finalize()`` at a clean end. ``OtelMonitor`` maps them onto a
:class:`prime_otel.Run`. It subclasses prime-rl's ``Monitor`` when prime-rl
is importable, and stands alone otherwise, so this package never depends on
prime-rl. Hooks prime-rl adds later (``log_annotations``, ``log_live``,
``log_eval_plan``, ``log_eval_epoch``, …) are accepted and ignored.

Register it beside prime-rl's own monitors, after ``setup``::

    from prime_otel.prime_rl import OtelMonitor
    await OtelMonitor.register(run_config=config)   # rank 0 only, as setup does
"""

import logging
import os
from typing import Any, Dict, Optional

from .models import TrainingSpec
from .run import Run
from .start import init

try:  # pragma: no cover - depends on what the trainer has installed
    from prime_rl.monitors.base import Monitor as _Base
except Exception:  # noqa: BLE001 - any import failure means "no prime-rl"
    _Base = object  # type: ignore[assignment,misc]

logger = logging.getLogger("prime_otel")


class OtelMonitor(_Base):  # type: ignore[misc,valid-type]
    """prime-rl's monitor interface onto a prime_otel run. Only the train
    "effective" cohort becomes sample rows, as prime-rl's platform monitor sends."""

    def __init__(self, config: Any = None, **run_kwargs: Any) -> None:
        if _Base is not object:
            super().__init__(config)
        self.config = config
        self.run: Optional[Run] = None
        self._run_kwargs = run_kwargs

    @classmethod
    async def register(cls, run_config: Any = None, config: Any = None, **run_kwargs: Any) -> Optional["OtelMonitor"]:
        """Initialise a monitor and add it to prime-rl's registered monitors.
        Other ranks get none, as ``prime_rl.monitors.setup`` gives them none."""
        rank = int(os.environ.get("RANK", os.environ.get("DP_RANK", "0")))
        if rank != 0:
            return None
        monitor = cls(config, **run_kwargs)
        await monitor.init(config=run_config)
        import prime_rl.monitors as monitors  # only reached with prime-rl installed

        monitors.MONITORS.append(monitor)
        return monitor

    async def init(self, config: Any = None, **_: Any) -> None:
        kwargs: Dict[str, Any] = {"kind": "train", "name": getattr(self.config, "name", None)}
        if config is not None:
            kwargs.update(_run_fields(config))
        kwargs.update(self._run_kwargs)
        self.run = init(**kwargs)

    async def log(self, data: Any, step: Optional[int] = None, kind: str = "train", subset: str = "effective") -> None:
        if isinstance(data, dict):
            await self.log_metrics(data, step=step)
        else:
            await self.log_episodes(data if isinstance(data, list) else [data], step=step, kind=kind, subset=subset)

    async def log_metrics(self, metrics: Dict[str, Any], step: Optional[int] = None) -> None:
        self._live().log_metrics(metrics, step=step)

    async def log_episodes(self, episodes: Any, step: Optional[int] = None, kind: str = "train", subset: str = "effective") -> None:
        if kind != "train" or subset != "effective" or not episodes:
            return
        self._live().log_episodes(episodes, step=step)

    async def finalize(self) -> None:
        if self.run is not None:
            self.run.finish()

    def __getattr__(self, name: str) -> Any:
        # A hook prime-rl added after this monitor was written: accept it.
        if name.startswith("log_"):
            async def ignored(*args: Any, **kwargs: Any) -> None:
                return None

            return ignored
        raise AttributeError(name)

    def _live(self) -> Run:
        if self.run is None:
            raise RuntimeError("OtelMonitor.init() has not been called")
        return self.run


def _run_fields(config: Any) -> Dict[str, Any]:
    """What prime-rl's own platform monitor sends at create, read off the
    orchestrator's config; a field the config lacks is left out."""
    fields: Dict[str, Any] = {}
    model = getattr(getattr(config, "model", None), "name", None)
    if model:
        fields["model"] = model
    source = getattr(getattr(config, "train", None), "source", None) or []
    envs = [getattr(env, "env_id", None) for env in source]
    if any(envs):
        fields["environments"] = [e for e in envs if e]
    fields["training"] = TrainingSpec(
        max_steps=getattr(config, "max_steps", None) or 0,
        batch_size=getattr(config, "batch_size", None),
        rollouts_per_example=getattr(config, "group_size", None),
        seq_len=getattr(config, "seq_len", None),
    )
    dump = getattr(config, "model_dump", None)
    if callable(dump):
        fields["config"] = dump(exclude_none=True, mode="json")
    return fields
