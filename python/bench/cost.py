"""What prime_otel costs a trainer, measured with the real OpenTelemetry SDK.

    python3 cost.py [--episodes N] [--calls N]

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
"""

import argparse
import json
import os
import random
import sys
import time


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    import prime_otel as pr

    rows = [
        measure(pr, "2 KB chat", chat_episode, args.episodes * 5, 10, chunk=100),
        measure(pr, "150 KiB arrays", array_episode, args.episodes, 10, chunk=10),
        metrics_call(pr, args.calls),
    ]
    for row in rows:
        print(json.dumps(row))
    print(json.dumps({"python": sys.version.split()[0], "pid": os.getpid()}), file=sys.stderr)


if __name__ == "__main__":
    main()
