package main

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

func logsRequest(t *testing.T, perScope ...int) []byte {
	t.Helper()
	logs := plog.NewLogs()
	for _, n := range perScope {
		rl := logs.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "x")
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName("s")
		for range n {
			sl.LogRecords().AppendEmpty().Body().SetStr("hello")
		}
	}
	raw, err := plogotlp.NewExportRequestFromLogs(logs).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestCountLogRecordsWalksResourcesAndScopes(t *testing.T) {
	n, err := countLogRecords(logsRequest(t, 3, 0, 4))
	if err != nil || n != 7 {
		t.Fatalf("countLogRecords = %d, %v; want 7", n, err)
	}
	if _, err := countLogRecords([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Error("a truncated request counted without an error")
	}
}

func TestTheSinkCountsGzippedRecordsAndAnswersAnEmptyResponse(t *testing.T) {
	s, err := startSink()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	_, _ = zw.Write(logsRequest(t, 5))
	_ = zw.Close()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/logs", &body)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Fatalf("answered %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if got := s.records.Load(); got != 5 {
		t.Errorf("records = %d, want 5", got)
	}
}
