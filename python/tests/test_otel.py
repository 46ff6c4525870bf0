import enum
import unittest

from prime_otel import _otel


class Result(enum.Enum):
    SUCCESS = 0
    FAILURE = 1


class Record:
    def __init__(self, body):
        self.log_record = self
        self.body = body


class Inner:
    def __init__(self, fail_on=()):
        self.calls = []
        self.fail_on = fail_on

    def export(self, batch):
        self.calls.append(list(batch))
        return Result.FAILURE if len(self.calls) in self.fail_on else Result.SUCCESS


class SizedExport(unittest.TestCase):
    def test_a_batch_is_cut_in_order_so_no_request_outgrows_the_limit(self):
        inner = Inner()
        records = [Record({"text": "x" * 400}) for _ in range(10)]
        self.assertEqual(_otel.SizedExporter(inner, limit=1000).export(records), Result.SUCCESS)
        self.assertEqual([len(c) for c in inner.calls], [2, 2, 2, 2, 2])
        self.assertEqual([r for c in inner.calls for r in c], records)

    def test_a_record_over_the_limit_goes_alone_and_a_failed_part_fails_the_export(self):
        inner = Inner(fail_on=(2,))
        records = [Record("a"), Record("b" * 5000), Record("c")]
        self.assertEqual(_otel.SizedExporter(inner, limit=1000).export(records), Result.FAILURE)
        self.assertEqual([len(c) for c in inner.calls], [1, 1, 1])

    def test_text_is_measured_in_utf8_bytes(self):
        self.assertEqual(_otel.size_of("é" * 10) - _otel.size_of("e" * 10), 10)



class OpenPipeline(unittest.TestCase):
    """The provider choice, with a stand-in for opentelemetry._logs: the real
    SDK path is what the recordings prove."""

    def app_provider(self, attributes):
        import types

        class Provider:
            resource = types.SimpleNamespace(attributes=attributes)
            flushed = shut = 0

            def get_logger(self, name, version):
                return types.SimpleNamespace(emit=lambda **kw: None)

            def force_flush(self, timeout_millis):
                Provider.flushed += 1
                return True

            def shutdown(self):
                Provider.shut += 1

        return Provider()

    def open_with(self, provider):
        import sys
        import types
        from unittest import mock

        logs = types.ModuleType("opentelemetry._logs")
        logs.get_logger_provider = lambda: provider
        otel = types.ModuleType("opentelemetry")
        otel._logs = logs
        with mock.patch.dict(sys.modules, {"opentelemetry": otel, "opentelemetry._logs": logs}):
            return _otel.open_pipeline({"prime.run.key": "k"}, "http://127.0.0.1:4318")

    def test_the_applications_provider_is_used_when_its_resource_names_a_run_and_is_never_shut_down(self):
        provider = self.app_provider({"prime.run.key": "from-env"})
        pipeline = self.open_with(provider)
        self.assertFalse(pipeline.owned)
        pipeline.flush(1.0)
        pipeline.shutdown()
        self.assertEqual((type(provider).flushed, type(provider).shut), (1, 0))

    def test_an_application_provider_that_names_no_run_is_left_alone(self):
        # Without the run in its resource the package builds its own provider,
        # which needs the SDK's export modules: absent from this stand-in.
        with self.assertRaises(ImportError):
            self.open_with(self.app_provider({"service.name": "trainer"}))


if __name__ == "__main__":
    unittest.main()
