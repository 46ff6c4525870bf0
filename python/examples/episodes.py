"""Stand-ins for verifiers' ``Episode`` for the examples: an object with
``to_record()`` returning a native episode document (one trainable trace, a
system and user prompt, one sampled answer), shaped as verifiers writes it."""

import time
import uuid


class Episode:
    def __init__(self, step, idx, reward, kind="train", extra_metrics=None):
        self.step, self.idx, self.reward, self.kind = step, idx, reward, kind
        self.extra_metrics = extra_metrics or {}

    def to_record(self):
        now = time.time()
        question, answer = f"What is {self.idx} + {self.idx}?", str(2 * self.idx)
        nodes = [
            {"message": {"role": "system", "content": "Answer briefly."}, "sampled": False, "token_ids": [1, 2]},
            {"parent": 0, "message": {"role": "user", "content": question}, "sampled": False, "token_ids": [3, 4, 5]},
            {"parent": 1, "message": {"role": "assistant", "content": answer}, "sampled": True, "token_ids": [6, 7],
             "logprobs": [-0.1, -0.2]},
        ]
        trace = {
            "version": 1,
            "id": uuid.uuid4().hex,
            "task": {"type": "MathTask", "data": {"idx": self.idx, "question": question, "answer": answer}},
            "agent": {"name": "solver", "trainable": True},
            "nodes": nodes,
            "calls": [{"node": 2, "model": "Qwen/Qwen3-0.6B", "usage": {"prompt_tokens": 5, "completion_tokens": 2},
                       "time": {"start": now - 1, "end": now}}],
            "rewards": {"correct_answer": {"score": self.reward, "weight": 1.0}},
            "metrics": {"num_turns": 1.0, **self.extra_metrics},
            "info": {"advantage": self.reward - 0.5},
            "is_completed": True,
            "ok": True,
        }
        return {
            "id": uuid.uuid4().hex,
            "env": {"id": "primeintellect/gsm8k", "name": "gsm8k"},
            "task": trace["task"],
            "run": {"type": self.kind, "work": {"type": self.kind, "step": self.step}},
            "ok": True,
            "errors": [],
            "traces": [trace],
        }
