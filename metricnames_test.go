package primeexporter

// The counters' exported names, as the tests read them. metadata.yaml
// declares them, mdatagen builds the instruments, internal/telemetry sets
// their attributes, and docs/telemetry.md §4 lists them.
const (
	metricRejected      = "otelcol_exporter_prime_records_rejected"
	metricSkipped       = "otelcol_exporter_prime_records_skipped"
	metricThrottled     = "otelcol_exporter_prime_records_throttled"
	metricCoerced       = "otelcol_exporter_prime_records_coerced"
	metricTraceBatches  = "otelcol_exporter_prime_trace_batches_uploaded"
	metricTraceDocs     = "otelcol_exporter_prime_trace_documents_uploaded"
	metricPosts         = "otelcol_exporter_prime_metric_posts"
	metricRuns          = "otelcol_exporter_prime_runs"
	metricSampleRows    = "otelcol_exporter_prime_sample_rows_uploaded"
	metricSampleObjects = "otelcol_exporter_prime_sample_objects_uploaded"
	metricSampleBytes   = "otelcol_exporter_prime_sample_bytes_uploaded"
	metricRunsOpen      = "otelcol_exporter_prime_runs_open"
	metricRunIdleMax    = "otelcol_exporter_prime_run_idle_seconds_max"
)
