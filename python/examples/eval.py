"""An evaluation through prime_otel: samples as verifiers episodes, the summary at the end."""

import prime_otel as pr
from episodes import Episode

run = pr.init(kind="eval", name="gsm8k-nightly", model="Qwen/Qwen3-0.6B", environments=["primeintellect/gsm8k"],
              framework="verifiers", tags=["nightly"], config={"rollouts": 3})
rewards = []
for i in range(12):
    reward = float(i % 3 == 0)
    rewards.append(reward)
    run.log_episodes([Episode(0, i, reward, kind="eval")])
run.finish(summary={"avg_reward": sum(rewards) / len(rewards), "avg_metrics": {"num_turns": 1.0}})
