package main

import (
	"strings"
	"testing"
)

func TestSumAddsTheSeriesOfOneNameAndLabel(t *testing.T) {
	ss, err := parseSeries(strings.NewReader(`# HELP otelcol_exporter_sent_log_records x
# TYPE otelcol_exporter_sent_log_records counter
otelcol_exporter_sent_log_records{exporter="debug",service_name="otelcol-bench"} 1200
otelcol_exporter_sent_log_records{exporter="prime",service_name="otelcol-bench"} 7
otelcol_exporter_sent_log_records{exporter="debug",transport="x"} 34
otelcol_process_uptime 1.5e+01
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sum(ss, "otelcol_exporter_sent_log_records", `exporter="debug"`); got != 1234 {
		t.Errorf("debug = %g, want 1234", got)
	}
	if got := sum(ss, "otelcol_process_uptime", ""); got != 15 {
		t.Errorf("uptime = %g, want 15", got)
	}
	if _, err := parseSeries(strings.NewReader("broken{a=\"b\" \n")); err == nil {
		t.Error("a line without a value parsed")
	}
}
