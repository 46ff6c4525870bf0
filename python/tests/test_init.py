import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stderr

import prime_otel as pr
from prime_otel.models import EnvironmentRef

from .fakes import patched


class InitDescribesTheRunToTheCollector(unittest.TestCase):
    def test_a_training_run_names_its_key_model_environments_and_training_as_resource_attributes(self):
        with patched({"PRIME_RUN_KEY": "k-1", "PRIME_TEAM_ID": "team-9"}) as otel:
            pr.init(kind="train",
                model="Qwen/Qwen3-0.6B",
                name="gsm8k-run",
                environments=["gsm8k", "primeintellect/vf-math", {"name": "wiki", "version_id": "v3"}],
                training=pr.TrainingSpec(max_steps=20, batch_size=8, rollouts_per_example=4, seq_len=2048),
                config={"lr": 1e-6, "nested": {"a": [1, 2]}, "bad": float("nan")},
            )
        self.assertEqual(otel.opened[0].resource, {
            "prime.run.kind": "train",
            "prime.run.key": "k-1",
            "prime.run.name": "gsm8k-run",
            "prime.run.model": "Qwen/Qwen3-0.6B",
            "prime.run.team_id": "team-9",
            "prime.run.environments": ["gsm8k", "primeintellect/vf-math", "wiki@v3"],
            "prime.run.config": '{"lr":1e-06,"nested":{"a":[1,2]},"bad":null}',
            "prime.training.max_steps": 20,
            "prime.training.batch_size": 8,
            "prime.training.rollouts_per_example": 4,
            "prime.training.seq_len": 2048,
        })

    def test_the_endpoint_comes_from_the_argument_then_the_otlp_variable_then_localhost(self):
        cases = [
            ({}, None, "http://127.0.0.1:4318"),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, None, "http://collector:4318"),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://other:4318", "http://other:4318"),
        ]
        for env, arg, want in cases:
            with self.subTest(env=env, arg=arg), patched({"PRIME_RUN_KEY": "k", **env}) as otel:
                pr.init(kind="train", endpoint=arg)
                self.assertEqual(otel.opened[0].endpoint, want)

    def test_a_config_file_is_sent_byte_for_byte_as_the_platform_sdk_stores_it(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "rl.toml")
            with open(path, "w") as f:
                f.write("# comment\nmax_steps = 20\n")
            with patched({"PRIME_RUN_KEY": "k"}) as otel:
                run = pr.init(kind="train", config=path)
        sent = json.loads(otel.opened[0].resource["prime.run.config"])
        self.assertEqual(sent, {"config_source": {"format": "toml", "text": "# comment\nmax_steps = 20\n", "filename": "rl.toml"}})
        self.assertEqual(run.config_source.text, "# comment\nmax_steps = 20\n")

    def test_an_evaluation_sends_its_kind_tags_framework_and_description(self):
        with patched({"PRIME_RUN_KEY": "e-1"}) as otel:
            run = pr.init(kind="eval", environments=["gsm8k"], model="m", tags=["nightly"], framework="verifiers", description="d")
        self.assertEqual(run.kind, "eval")
        r = otel.opened[0].resource
        self.assertEqual((r["prime.run.kind"], r["prime.eval.tags"], r["prime.eval.framework"], r["prime.eval.description"]),
                         ("eval", ["nightly"], "verifiers", "d"))


class WhichRun(unittest.TestCase):
    def test_an_id_attaches_from_the_argument_then_prime_run_id_then_run_id(self):
        cases = [
            ({"RUN_ID": "r-env"}, None, "r-env"),
            ({"RUN_ID": "r-env", "PRIME_RUN_ID": "p-env"}, None, "p-env"),
            ({"RUN_ID": "r-env"}, "r-arg", "r-arg"),
        ]
        for env, arg, want in cases:
            with self.subTest(env=env, arg=arg), patched(env) as otel:
                run = pr.init(kind="train", id=arg)
                self.assertEqual((run.id, run.attached, run.key), (want, True, None))
                self.assertEqual(otel.opened[0].resource["prime.run.id"], want)
                self.assertNotIn("prime.run.key", otel.opened[0].resource)

    def test_an_evaluation_does_not_attach_to_the_training_launchers_run_id(self):
        with patched({"RUN_ID": "train-run", "PRIME_RUN_KEY": "e"}) as otel:
            run = pr.init(kind="eval")
        self.assertFalse(run.attached)
        self.assertEqual(otel.opened[0].resource["prime.run.key"], "e")

    def test_without_a_key_rank_0_draws_one_prints_it_and_hands_it_to_the_processes_it_starts(self):
        err = io.StringIO()
        with patched() as otel, redirect_stderr(err):
            run = pr.init(kind="train")
            self.assertEqual(os.environ["PRIME_RUN_KEY"], run.key)
        self.assertTrue(run.key.startswith("run-"))
        self.assertIn(run.key, err.getvalue())
        self.assertEqual(otel.opened[0].resource["prime.run.key"], run.key)

    def test_another_rank_without_a_shared_key_is_refused_naming_the_variable(self):
        for var in ("RANK", "DP_RANK", "LOCAL_RANK"):
            with self.subTest(var=var), patched({var: "3"}):
                with self.assertRaisesRegex(pr.ConfigurationError, "PRIME_RUN_KEY"):
                    pr.init(kind="train")

    def test_every_rank_with_the_shared_key_sends_to_the_same_run(self):
        for rank in ("0", "1", "7"):
            with self.subTest(rank=rank), patched({"RANK": rank, "PRIME_RUN_KEY": "shared"}) as otel:
                run = pr.init(kind="train")
                self.assertEqual((run.rank, otel.opened[0].resource["prime.run.key"]), (int(rank), "shared"))


class BadArguments(unittest.TestCase):
    def test_each_is_refused_with_an_error_naming_it(self):
        cases = [
            ({"kind": "sft"}, "kind"),
            ({"kind": "eval", "training": pr.TrainingSpec(max_steps=1)}, "training"),
            ({"mode": "offline"}, "mode"),
            ({"training": pr.TrainingSpec(max_steps=-1)}, "max_steps"),
            ({"config": 42}, "config"),
            ({"config": "/no/such/file.toml"}, "config"),
        ]
        for kwargs, named in cases:
            with self.subTest(kwargs=kwargs), patched({"PRIME_RUN_KEY": "k"}):
                with self.assertRaisesRegex((pr.PrimeRunsError, TypeError), named):
                    pr.init(**{"kind": "train", **kwargs})

    def test_an_environment_needs_a_name_slug_or_id(self):
        with self.assertRaises(ValueError):
            EnvironmentRef()

    def test_the_api_key_goes_as_the_collectors_credentials_and_nowhere_else(self):
        with patched({"PRIME_RUN_KEY": "k"}) as otel:
            run = pr.init(kind="train", api_key="sk-secret", base_url="https://api.example")
        pipeline = otel.opened[0]
        self.assertEqual(pipeline.options["credentials"].headers(), {"authorization": "Bearer sk-secret"})
        self.assertEqual(otel.checks[0]["credentials"].headers(), {"authorization": "Bearer sk-secret"})
        for shown in (repr(pipeline.resource), repr(pipeline.options), repr(otel.checks), repr(run)):
            self.assertNotIn("sk-secret", shown)


class DisabledMode(unittest.TestCase):
    def test_a_disabled_run_opens_nothing_and_every_call_is_a_no_op(self):
        for how in ({"mode": "disabled"}, {}):
            env = {"PRIME_RUN_KEY": "k"} if how else {"PRIME_RUN_KEY": "k", "PRIME_RUNS_MODE": "DISABLED"}
            with self.subTest(how=how), patched(env) as otel:
                run = pr.init(kind="train", **how)
                run.log_metrics({"loss": 1.0}, step=1)
                run.log_episodes([{"prompt": "p"}], step=1)
                run.finish()
                self.assertEqual((otel.opened, run.mode, run.status), ([], "disabled", pr.RunStatus.COMPLETED))


if __name__ == "__main__":
    unittest.main()
