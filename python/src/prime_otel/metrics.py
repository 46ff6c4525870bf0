"""Run-level aggregates over verifiers episodes, as ``prime_runs.metrics``
computes them, for ``finish(summary=...)`` of an evaluation. The collector
computes the same aggregates from the episodes that reached the platform;
passing them is only needed when a trainer wants them in ``run.summary``."""

from typing import Any, Dict, Optional, Sequence


def from_episodes(episodes: Sequence[Any], traces: Optional[Sequence[Any]] = None) -> Dict[str, Any]:
    """``avg_reward`` and ``avg_metrics`` over the trainable traces (all traces
    when none is trainable: fixed agents such as a judge carry no rewards and
    would pull every mean down), and ``avg_error``, the share of episodes
    that are not ok. Duck-typed: verifiers is never imported."""
    if traces is None:
        traces = [trace for episode in episodes for trace in episode.traces]
    scored = [t for t in traces if t.agent.trainable] or list(traces)
    sums: Dict[str, float] = {}
    counts: Dict[str, int] = {}
    for trace in scored:
        values = {name: r.score for name, r in trace.rewards.items() if r is not None}
        values.update({name: v for name, v in trace.metrics.items() if v is not None})
        for name, value in values.items():
            sums[name] = sums.get(name, 0.0) + value
            counts[name] = counts.get(name, 0) + 1
    n = len(scored)
    return {
        "avg_reward": sum(t.reward for t in scored) / n if n else 0.0,
        "avg_metrics": {name: sums[name] / counts[name] for name in sums},
        "avg_error": sum(not e.ok for e in episodes) / len(episodes) if episodes else 0.0,
    }
