package rfttest

import (
	"bytes"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestPresignMintsAFreshSignedKeyPerCall(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	seen := map[string]bool{}
	for range 2 {
		res := c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":10}`)
		wantStatus(t, "presign", res, http.StatusOK)
		d := res.json(t)["data"].(map[string]any)
		key, _ := d["s3Key"].(string)
		raw, _ := d["presignedUrl"].(string)
		if !strings.HasPrefix(key, "runs/"+id+"/step_10_") || !strings.HasSuffix(key, ".parquet") {
			t.Errorf("s3Key = %q", key)
		}
		if seen[key] {
			t.Errorf("key %s minted twice", key)
		}
		seen[key] = true
		u, err := url.Parse(raw)
		if err != nil || u.Scheme+"://"+u.Host != s.URL() || u.Path != "/storage/"+key || u.Query().Get("X-Sig") == "" {
			t.Errorf("presignedUrl = %q (err %v)", raw, err)
		}
		if d["expiresIn"] != 900.0 {
			t.Errorf("expiresIn = %v", d["expiresIn"])
		}
	}
	if objs := mustRun(t, s, id).Objects; len(objs) != 0 {
		t.Errorf("presign alone made objects: %+v", objs)
	}
}

func TestPresignRefusesAnUnknownRunAndABadStep(t *testing.T) {
	_, c := start(t, Options{})
	wantStatus(t, "unknown run", c.post("/rft/samples/presign", `{"run_id":"run-9","step":1}`), http.StatusNotFound)
	id := c.createRun()
	wantStatus(t, "no step", c.post("/rft/samples/presign", `{"run_id":"`+id+`"}`), http.StatusBadRequest)
	wantStatus(t, "a string step", c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":"1"}`), http.StatusBadRequest)
}

func TestAnUploadedAndConfirmedObjectJoinsTheRunOnce(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	k1, put := c.upload(id, 10, "PAR1-a")
	wantStatus(t, "put", put, http.StatusOK)
	if put.header.Get("ETag") == "" {
		t.Error("storage answered without an ETag")
	}
	k2, put := c.upload(id, 20, "PAR1-b")
	wantStatus(t, "put", put, http.StatusOK)
	k3, put := c.upload(id, 10, "PAR1-c") // never confirmed
	wantStatus(t, "put", put, http.StatusOK)

	for _, confirm := range []string{
		`{"run_id":"` + id + `","step":20,"s3_key":"` + k2 + `"}`,
		`{"run_id":"` + id + `","step":10,"s3_key":"` + k1 + `"}`,
		`{"run_id":"` + id + `","step":20,"s3_key":"` + k2 + `"}`, // a replay
	} {
		res := c.post("/rft/samples/confirm", confirm)
		wantStatus(t, "confirm", res, http.StatusOK)
	}
	want := []Object{
		{Step: 20, Key: k2, Body: []byte("PAR1-b"), Confirmed: true},
		{Step: 10, Key: k1, Body: []byte("PAR1-a"), Confirmed: true},
		{Step: 10, Key: k3, Body: []byte("PAR1-c"), Confirmed: false},
	}
	if got := mustRun(t, s, id).Objects; !reflect.DeepEqual(got, want) {
		t.Fatalf("Objects = %+v\nwant %+v", got, want)
	}
}

func TestConfirmRefusesAKeyNotPresignedAndUploadedForThatRunAndStep(t *testing.T) {
	s, c := start(t, Options{})
	id, other := c.createRun(), c.createRun()
	uploaded, put := c.upload(id, 10, "x")
	wantStatus(t, "put", put, http.StatusOK)
	otherKey, put := c.upload(other, 10, "y")
	wantStatus(t, "put", put, http.StatusOK)
	res := c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":10}`)
	notUploaded := res.json(t)["data"].(map[string]any)["s3Key"].(string)

	tests := []struct {
		name   string
		body   string
		status int
	}{
		{"a key never presigned", `{"run_id":"` + id + `","step":10,"s3_key":"runs/` + id + `/step_10_made-up.parquet"}`, http.StatusBadRequest},
		{"another run's key", `{"run_id":"` + id + `","step":10,"s3_key":"` + otherKey + `"}`, http.StatusBadRequest},
		{"the wrong step", `{"run_id":"` + id + `","step":11,"s3_key":"` + uploaded + `"}`, http.StatusBadRequest},
		{"a key presigned but not uploaded", `{"run_id":"` + id + `","step":10,"s3_key":"` + notUploaded + `"}`, http.StatusBadRequest},
		{"an empty key", `{"run_id":"` + id + `","step":10,"s3_key":""}`, http.StatusBadRequest},
		{"no step", `{"run_id":"` + id + `","s3_key":"` + uploaded + `"}`, http.StatusBadRequest},
		{"an unknown run", `{"run_id":"run-9","step":10,"s3_key":"` + uploaded + `"}`, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := c.post("/rft/samples/confirm", tt.body)
			wantStatus(t, "confirm", res, tt.status)
			if res.detail() == "" {
				t.Errorf("no detail: %s", res.body)
			}
		})
	}
	for _, r := range s.Runs() {
		for _, o := range r.Objects {
			if o.Confirmed {
				t.Errorf("run %s: a refused confirm confirmed %s", r.ID, o.Key)
			}
		}
	}
}

func TestStorageTrustsOnlyTheSignatureAndTheSignedContentType(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *http.Request)
	}{
		{"an Authorization header", func(r *http.Request) { r.Header.Set("Authorization", "Bearer test-key") }},
		{"an x-api-key header", func(r *http.Request) { r.Header.Set("x-api-key", "test-key") }},
		{"no signature", func(r *http.Request) { r.URL.RawQuery = "" }},
		{"a signature of another key", func(r *http.Request) {
			r.URL.RawQuery = "X-Sig=" + strings.Repeat("ab", 32)
		}},
		{"no Content-Type", func(r *http.Request) { r.Header.Del("Content-Type") }},
		{"a JSON Content-Type", func(r *http.Request) { r.Header.Set("Content-Type", "application/json") }},
		{"a generic Content-Type", func(r *http.Request) { r.Header.Set("Content-Type", "application/octet-stream") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			id := c.createRun()
			res := c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":1}`)
			d := res.json(t)["data"].(map[string]any)
			req := storagePut(t, d["presignedUrl"].(string), "PAR1")
			tt.edit(req)
			put := c.do(req)
			wantStatus(t, "put", put, http.StatusForbidden)
			if !bytes.Contains(put.body, []byte("<Error>")) {
				t.Errorf("storage error is not S3-shaped: %s", put.body)
			}
			if objs := mustRun(t, s, id).Objects; len(objs) != 0 {
				t.Errorf("a refused PUT stored an object: %+v", objs)
			}
			confirm := c.post("/rft/samples/confirm", `{"run_id":"`+id+`","step":1,"s3_key":"`+d["s3Key"].(string)+`"}`)
			wantStatus(t, "confirm after a refused PUT", confirm, http.StatusBadRequest)
		})
	}
}

func TestASecondPutOfAKeyReplacesTheObject(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	res := c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":1}`)
	d := res.json(t)["data"].(map[string]any)
	for _, data := range []string{"first", "second"} {
		wantStatus(t, "put", c.do(storagePut(t, d["presignedUrl"].(string), data)), http.StatusOK)
	}
	objs := mustRun(t, s, id).Objects
	if len(objs) != 1 || string(objs[0].Body) != "second" {
		t.Fatalf("Objects = %+v", objs)
	}
}

func TestSampleWritesToAClosedRunAreRefusedWith409(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	key, put := c.upload(id, 1, "x")
	wantStatus(t, "put", put, http.StatusOK)
	wantStatus(t, "status", c.call(http.MethodPut, "/rft/external-runs/"+id+"/status", `{"status":"failed"}`), http.StatusOK)

	wantStatus(t, "presign", c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":2}`), http.StatusConflict)
	wantStatus(t, "confirm", c.post("/rft/samples/confirm", `{"run_id":"`+id+`","step":1,"s3_key":"`+key+`"}`), http.StatusConflict)
	if objs := mustRun(t, s, id).Objects; len(objs) != 1 || objs[0].Confirmed {
		t.Fatalf("Objects = %+v", objs)
	}
}
