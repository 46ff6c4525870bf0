package rfttest

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
)

// parquetFile is a real Parquet file of n rows.
func parquetFile(t *testing.T, n int) string {
	t.Helper()
	type row struct {
		Step   int64  `parquet:"step"`
		Prompt string `parquet:"prompt"`
	}
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{Step: 10, Prompt: "problem " + strconv.Itoa(i)}
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func confirmBody(runID, key string, step int) string {
	return `{"run_id":"` + runID + `","step":` + strconv.Itoa(step) + `,"s3_key":"` + key + `"}`
}

func TestDiscardModeCountsConfirmedRowsAndKeepsNoBytes(t *testing.T) {
	s, c := start(t, Options{DiscardObjects: true})
	id := c.createRun()
	data := parquetFile(t, 7)

	k1, put := c.upload(id, 10, data)
	wantStatus(t, "put", put, http.StatusOK)
	if got, want := put.header.Get("ETag"), strconv.Quote(strconv.FormatUint(xxhash.Sum64String(data), 16)); got != want {
		t.Errorf("ETag = %s, want the xxhash of the bytes sent, %s", got, want)
	}
	etag := put.header.Get("ETag")
	_, put = c.upload(id, 20, parquetFile(t, 5)) // uploaded, never confirmed
	wantStatus(t, "put", put, http.StatusOK)
	if put.header.Get("ETag") == etag {
		t.Errorf("two different objects both have ETag %s", etag)
	}
	if n := s.ConfirmedRows(); n != 0 {
		t.Errorf("ConfirmedRows before any confirm = %d, want 0", n)
	}

	wantStatus(t, "confirm", c.post("/rft/samples/confirm", confirmBody(id, k1, 10)), http.StatusOK)
	wantStatus(t, "confirm again", c.post("/rft/samples/confirm", confirmBody(id, k1, 10)), http.StatusOK)
	if n := s.ConfirmedRows(); n != 7 {
		t.Errorf("ConfirmedRows = %d, want the 7 rows of the one confirmed object", n)
	}

	for _, o := range mustRun(t, s, id).Objects {
		if o.Body != nil {
			t.Errorf("object %s kept %d bytes", o.Key, len(o.Body))
		}
	}
	for _, r := range s.Requests() {
		if r.Method == http.MethodPut && len(r.Body) != 0 {
			t.Errorf("the request log kept %d bytes of PUT %s", len(r.Body), r.Path)
		}
	}
}

func TestDiscardModeRefusesAnObjectItCannotCount(t *testing.T) {
	s, c := start(t, Options{DiscardObjects: true})
	id := c.createRun()
	key, put := c.upload(id, 10, "PAR1-not-parquet")
	wantStatus(t, "put", put, http.StatusBadRequest)
	wantStatus(t, "confirm", c.post("/rft/samples/confirm", confirmBody(id, key, 10)), http.StatusBadRequest)
	if objs := mustRun(t, s, id).Objects; len(objs) != 0 {
		t.Errorf("a refused PUT made objects: %+v", objs)
	}
}

func TestDiscardModeStillChecksTheSignature(t *testing.T) {
	_, c := start(t, Options{DiscardObjects: true})
	res := c.do(storagePut(t, c.s.URL()+"/storage/runs/x/step_10.parquet?X-Sig=00", parquetFile(t, 1)))
	wantStatus(t, "unsigned put", res, http.StatusForbidden)
}

func TestWithoutDiscardModeObjectsKeepTheirBytes(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	data := parquetFile(t, 3)
	key, put := c.upload(id, 10, data)
	wantStatus(t, "put", put, http.StatusOK)
	wantStatus(t, "confirm", c.post("/rft/samples/confirm", confirmBody(id, key, 10)), http.StatusOK)
	if objs := mustRun(t, s, id).Objects; len(objs) != 1 || string(objs[0].Body) != data {
		t.Errorf("objects = %d, want the one object with its bytes", len(objs))
	}
	if n := s.ConfirmedRows(); n != 0 {
		t.Errorf("ConfirmedRows outside discard mode = %d, want 0", n)
	}
}
