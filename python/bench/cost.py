"""What prime_otel costs a trainer, measured with the real OpenTelemetry SDK.

    python3 cost.py [--episodes N] [--calls N] [--runs N] [--json]

Run by scripts/python-cost.sh, which assembles the SDK and starts the
collector stand-in (scripts/otlp_recorder.py) this sends to. Every figure is a
ratio to ``json.dumps`` of the same document in the same process, so the
machine's pace cancels out:

- CPU per episode on all threads (``time.process_time`` across ``log_episodes``
  and the ``flush`` that sends them), over ``json.dumps``'s CPU per episode,
  the two timed chunk by chunk in turn so that a drift in the machine's pace
  falls on both;
- the calling thread's time per episode (``time.thread_time``);
- the calling thread's time per ``log_metrics`` call with 20 keys.

Two episode shapes: about 2 KB of chat text, and a rollout with about 150 KiB
of token ids and logprobs (the arrays a trainer sends beside the text).

Each shape is measured ``--runs`` times (5), the shapes taking turns (chat,
arrays, metrics, chat, ...) so that a slow spell of the machine falls on
every shape, each run a run of its own (``init`` to ``finish``). It prints one
table: each shape's median ratio, the range of the runs, the per-episode
figure, issue 45's target and whether the median meets it; ``--json`` also
prints every run. The exit status is 1 when a median misses its target.

prime_runs, the SDK prime_otel replaces, is not measured beside it: it needs
httpx >= 0.25 and pydantic >= 2 (through prime_traces), which this machine
cannot install (no package index; Debian 12 ships httpx 0.23 and pydantic
1.10). docs/python.md quotes issue 45's figures for it.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

#: Issue 45's targets: (shape, column) -> the most the median may be, as a
#: multiple of json.dumps of the same episode.
TARGETS = {
    ("2 KB chat", "cpu_over_json_dumps"): 2.5,
    ("2 KB chat", "caller_over_json_dumps"): 1.3,
    ("150 KiB arrays", "cpu_over_json_dumps"): 1.7,
    ("150 KiB arrays", "caller_over_json_dumps"): 1.1,
}


def chat_episode(i):
    rng = random.Random(i)
    text = " ".join(rng.choice(["the", "answer", "is", "forty", "two", "because", "we", "add"]) for _ in range(110))
    messages = [
        {"role": "system", "content": "Answer with a number."},
        {"role": "user", "content": f"What is {i}+{i + 1}? " + text[:200]},
        {"role": "assistant", "content": text},
    ]
    return {
        "prompt": messages[:2],
        "completion": messages[-1:],
        "trajectory": [{"messages": messages, "num_input_tokens": 120, "num_output_tokens": 60}],
        "answer": str(2 * i + 1),
        "env_name": "gsm8k",
        "reward": float(i % 2),
        "advantage": 0.5 - (i % 2),
        "info": {"i": i},
    }


def array_episode(i, tokens=8192):
    """About 150 KiB as JSON: token ids and logprobs for prompt and completion."""
    rng = random.Random(i)
    episode = chat_episode(i)
    episode["trajectory"][0]["tokens"] = {
        "prompt_ids": [rng.randrange(150_000) for _ in range(tokens // 2)],
        "completion_ids": [rng.randrange(150_000) for _ in range(tokens // 2)],
        "completion_logprobs": [-rng.random() * 4 for _ in range(tokens // 2)],
        "completion_mask": [1] * (tokens // 2),
    }
    return episode


def dumps_cpu(part):
    start = time.process_time()
    for e in part:
        json.dumps(e)
    return time.process_time() - start


def measure(pr, shape, make, n, step, chunk):
    """Episodes logged chunk by chunk, each chunk flushed, with json.dumps of
    the same chunk timed next to it: the two share the machine's pace
    however it drifts along the run."""
    episodes = [make(i) for i in range(n)]
    size = sum(len(json.dumps(e)) for e in episodes) / n
    run = pr.init(kind="train", model="bench", environments=["bench"])
    dumps = cpu = caller = 0.0
    for k, at in enumerate(range(0, n, chunk)):
        part = episodes[at:at + chunk]
        # Which goes first alternates: the second finds the chunk in the cache.
        if k % 2 == 0:
            dumps += dumps_cpu(part)
        start, thread0 = time.process_time(), time.thread_time()
        for e in part:
            run.log_episodes([e], step=step)
        caller += time.thread_time() - thread0
        if not run.flush(timeout=600):
            sys.exit("the recorder did not take every episode")
        cpu += time.process_time() - start
        if k % 2 == 1:
            dumps += dumps_cpu(part)
    run.finish()
    return {
        "shape": shape, "bytes": round(size), "episodes": n,
        "json_dumps_us": round(dumps / n * 1e6, 1),
        "cpu_all_threads_us": round(cpu / n * 1e6, 1), "cpu_over_json_dumps": round(cpu / dumps, 2),
        "caller_us": round(caller / n * 1e6, 1), "caller_over_json_dumps": round(caller / dumps, 2),
    }


def metrics_call(pr, calls):
    run = pr.init(kind="train", model="bench", environments=["bench"])
    values = {f"group{k % 4}/metric_{k}": k * 0.125 for k in range(20)}
    start = time.thread_time()
    for step in range(calls):
        run.log_metrics(values, step=step)
    caller = (time.thread_time() - start) / calls
    run.flush(timeout=600)
    run.finish()
    return {"shape": "log_metrics, 20 keys", "calls": calls, "caller_us": round(caller * 1e6, 1)}


def table(runs):
    """One line per shape: the median of each ratio over the runs, their
    range, the per-episode figure, the target and pass or fail."""
    lines = [
        "| shape | CPU, all threads | target | | the calling thread | target | |",
        "|---|---|---|---|---|---|---|",
    ]
    missed = []
    for shape, rows in runs.items():
        cells = [f"{shape} ({rows[0]['bytes']} B)" if "bytes" in rows[0] else shape]
        for ratio, figure in (("cpu_over_json_dumps", "cpu_all_threads_us"), ("caller_over_json_dumps", "caller_us")):
            if ratio not in rows[0]:
                if figure in rows[0]:  # log_metrics: a time per call, no ratio
                    us = [r[figure] for r in rows]
                    cells += [f"{statistics.median(us):.1f} µs a call ({min(us):.1f}–{max(us):.1f})", "—", ""]
                else:
                    cells += ["", "", ""]
                continue
            values = [r[ratio] for r in rows]
            median = statistics.median(values)
            us = statistics.median(r[figure] for r in rows)
            target = TARGETS.get((shape, ratio))
            verdict = "" if target is None else ("pass" if median <= target else "FAIL")
            if verdict == "FAIL":
                missed.append(f"{shape}, {ratio}")
            cells += [f"{median:.2f}× ({min(values):.2f}–{max(values):.2f}; {us:.1f} µs)",
                      "—" if target is None else f"≤ {target}×", verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, missed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="also print every run")
    args = parser.parse_args()
    import prime_otel as pr

    shapes = {
        "2 KB chat": lambda: measure(pr, "2 KB chat", chat_episode, args.episodes * 5, 10, chunk=100),
        "150 KiB arrays": lambda: measure(pr, "150 KiB arrays", array_episode, args.episodes, 10, chunk=10),
        "log_metrics, 20 keys": lambda: metrics_call(pr, args.calls),
    }
    runs = {shape: [] for shape in shapes}
    for _ in range(args.runs):
        for shape, run in shapes.items():
            row = run()
            runs[shape].append(row)
            if args.json:
                print(json.dumps(row))
    lines, missed = table(runs)
    dumps = {shape: statistics.median(r["json_dumps_us"] for r in rows) for shape, rows in runs.items() if "json_dumps_us" in rows[0]}
    print(f"\nprime_otel, Python {sys.version.split()[0]}: medians of {args.runs} interleaved runs; a ratio is CPU per "
          "episode over json.dumps of the same episode, timed beside it (json.dumps: "
          + ", ".join(f"{shape} {us:.1f} µs" for shape, us in dumps.items()) + "); in brackets the runs' range and the median's time")
    print("\n".join(lines))
    if missed:
        print(f"missed: {'; '.join(missed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
