package rft

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPresignAcceptsEitherSpellingWithOrWithoutTheDataEnvelope(t *testing.T) {
	tests := []struct{ name, body string }{
		{"camel in data", `{"data":{"presignedUrl":"https://s3/u?sig=1","s3Key":"runs/r/step_10_x.parquet","expiresIn":900}}`},
		{"snake in data", `{"data":{"presigned_url":"https://s3/u?sig=1","s3_key":"runs/r/step_10_x.parquet","expires_in":900}}`},
		{"camel bare", `{"presignedUrl":"https://s3/u?sig=1","s3Key":"runs/r/step_10_x.parquet","expiresIn":900}`},
		{"snake bare", `{"presigned_url":"https://s3/u?sig=1","s3_key":"runs/r/step_10_x.parquet","expiresIn":"900"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200, body: tt.body}))
			c, _ := newTestClient(t, srv.URL)
			p, err := c.Presign(context.Background(), "run-abc", 10)
			if err != nil {
				t.Fatal(err)
			}
			want := Presigned{URL: "https://s3/u?sig=1", Key: "runs/r/step_10_x.parquet", ExpiresIn: 900 * time.Second}
			if p != want {
				t.Errorf("got %+v, want %+v", p, want)
			}
			jsonEqual(t, srv.requests()[0].Body, `{"run_id":"run-abc","step":10}`)
		})
	}
}

func TestPresignWithoutAnExpiryStillWorks(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200, body: `{"data":{"presignedUrl":"https://s3/u","s3Key":"k"}}`}))
	c, _ := newTestClient(t, srv.URL)
	p, err := c.Presign(context.Background(), "run-abc", 10)
	if err != nil || p.ExpiresIn != 0 {
		t.Errorf("got %+v, %v", p, err)
	}
}

func TestPresignWithoutAURLOrAKeyIsAProtocolErrorNamingTheKeysThatCameBack(t *testing.T) {
	tests := []struct{ name, body, says string }{
		{"no url", `{"data":{"s3Key":"k","expiresIn":900}}`, "no presigned URL (keys in the response: data.expiresIn, data.s3Key)"},
		{"no key", `{"data":{"presignedUrl":"https://s3/u"}}`, "no key (keys in the response: data.presignedUrl)"},
		{"neither", `{"url":"https://s3/u","key":"k"}`, "no presigned URL and no key (keys in the response: key, url)"},
		{"not an object", `["https://s3/u"]`, "the body is not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200, body: tt.body}))
			c, _ := newTestClient(t, srv.URL)
			_, err := c.Presign(context.Background(), "run-abc", 10)
			e := mustError(t, err)
			if e.Class != ClassProtocol || !strings.Contains(e.Message, tt.says) {
				t.Errorf("got %v: %q, want a protocol error saying %q", e.Class, e.Message, tt.says)
			}
		})
	}
}

func TestConfirmSendsTheRunTheStepAndTheKey(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200, body: `{"data":{"status":"success"}}`}))
	c, _ := newTestClient(t, srv.URL)
	if err := c.Confirm(context.Background(), "run-abc", 10, "runs/r/step_10_x.parquet"); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, srv.requests()[0].Body, `{"run_id":"run-abc","step":10,"s3_key":"runs/r/step_10_x.parquet"}`)
}

func TestPutSendsTheParquetBytesWithoutPlatformHeaders(t *testing.T) {
	store := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, "https://platform.invalid")
	body := []byte("PAR1\x00\x01parquet-bytes")
	if err := c.Put(context.Background(), store.URL+"/bucket/runs/r/step_10_x.parquet?X-Amz-Signature=abc", body); err != nil {
		t.Fatal(err)
	}
	r := store.requests()[0]
	if r.Method != http.MethodPut || r.Path != "/bucket/runs/r/step_10_x.parquet" {
		t.Errorf("sent %s %s", r.Method, r.Path)
	}
	if got := r.Header.Get("Content-Type"); got != "application/parquet" {
		t.Errorf("Content-Type = %q", got)
	}
	assertNoPlatformHeaders(t, r)
	if !bytes.Equal(r.Body, body) {
		t.Errorf("body = %q", r.Body)
	}
}

func TestPutDoesNotFollowARedirect(t *testing.T) {
	for _, tt := range []struct {
		name  string
		given func(t *testing.T) *http.Client // nil: New's default
	}{
		{"default client", nil},
		{"given client", func(*testing.T) *http.Client { return &http.Client{} }},
		{"NewObjectClient", func(t *testing.T) *http.Client {
			hc, err := NewObjectClient("", 0)
			if err != nil {
				t.Fatal(err)
			}
			return hc
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := newFakeServer(t, always(reply{status: 200}))
			store := newFakeServer(t, always(reply{status: http.StatusTemporaryRedirect, header: map[string]string{
				"Location": other.URL + "/elsewhere?X-Amz-Signature=other",
			}}))
			var given *http.Client
			var followedBefore bool
			c, _ := newTestClient(t, "https://platform.invalid", func(o *Options) {
				if tt.given != nil {
					given = tt.given(t)
					followedBefore = given.CheckRedirect == nil
					o.PutClient = given
				}
			})
			e := mustError(t, c.Put(context.Background(), store.URL+"/k?X-Amz-Signature=SECRETSIG", []byte("x")))
			if len(other.requests()) != 0 {
				t.Errorf("the redirect was followed")
			}
			if e.StatusCode != http.StatusTemporaryRedirect || !e.Permanent() || len(store.requests()) != 1 {
				t.Errorf("got %v after %d requests", e, len(store.requests()))
			}
			if s := e.Error(); !strings.Contains(s, "redirect not followed") || strings.Contains(s, "SECRETSIG") || strings.Contains(s, "X-Amz-Signature") {
				t.Errorf("error = %q, want one saying the redirect was not followed, without the signature", s)
			}
			if given != nil && (given.CheckRedirect == nil) != followedBefore {
				t.Error("New changed the caller's PUT client")
			}
		})
	}
}

func TestPutRetriesTransportErrors5xxAnd429UpToPutAttempts(t *testing.T) {
	for _, rep := range []reply{{status: 500}, {status: 502}, {status: 503}, {status: 429}, {hijack: true}} {
		name := fmt.Sprint(rep.status)
		if rep.hijack {
			name = "dropped connection"
		}
		t.Run(name, func(t *testing.T) {
			store := newFakeServer(t, always(rep))
			c, sl := newTestClient(t, "https://platform.invalid")
			e := mustError(t, c.Put(context.Background(), store.URL+"/k", []byte("x")))
			if n := len(store.requests()); n != 3 || e.Attempts != 3 || len(sl.waits()) != 2 {
				t.Errorf("%d requests, Attempts %d, %d waits; want 3, 3, 2", n, e.Attempts, len(sl.waits()))
			}
			if !e.Retryable() || e.Op != opPut {
				t.Errorf("got %#v", e)
			}
		})
	}
	t.Run("success on the last attempt", func(t *testing.T) {
		store := newFakeServer(t, failThen(reply{status: 503}, 2, reply{status: 200}))
		c, _ := newTestClient(t, "https://platform.invalid", func(o *Options) { o.MaxAttempts = 1 })
		if err := c.Put(context.Background(), store.URL+"/k", []byte("x")); err != nil {
			t.Errorf("Put: %v", err)
		}
	})
	t.Run("refused connection", func(t *testing.T) {
		c, sl := newTestClient(t, "https://platform.invalid", func(o *Options) { o.PutAttempts = 2 })
		e := mustError(t, c.Put(context.Background(), "http://"+closedAddr(t)+"/k?X-Amz-Signature=SECRETSIG", []byte("x")))
		if e.Class != ClassTransportUnsent || e.Attempts != 2 || len(sl.waits()) != 1 {
			t.Errorf("got %v after %d attempts", e.Class, e.Attempts)
		}
		if strings.Contains(e.Error(), "SECRETSIG") {
			t.Errorf("error holds the signature: %q", e)
		}
	})
}

func TestPutTreatsAnyOther4xxAsFinalAndKeepsOnlyTheStoresCodeAndMessage(t *testing.T) {
	const s3Body = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Request has expired</Message>
<StringToSign>AWS4-HMAC-SHA256 SECRETSIG</StringToSign><SignatureProvided>SECRETSIG</SignatureProvided></Error>`
	for _, tt := range []struct {
		code int
		want Class
	}{{400, ClassRejected}, {403, ClassForbidden}, {404, ClassNotFound}, {413, ClassRejected}} {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			store := newFakeServer(t, always(reply{status: tt.code, body: s3Body}))
			c, sl := newTestClient(t, "https://platform.invalid")
			e := mustError(t, c.Put(context.Background(), store.URL+"/k", []byte("x")))
			if len(store.requests()) != 1 || len(sl.waits()) != 0 {
				t.Errorf("%d requests, waits %v", len(store.requests()), sl.waits())
			}
			if e.Class != tt.want || !e.Permanent() {
				t.Errorf("class %v", e.Class)
			}
			if e.Message != "AccessDenied: Request has expired" || strings.Contains(e.Error(), "SECRETSIG") {
				t.Errorf("error = %q", e)
			}
		})
	}
}

func TestPutRefusesAURLItCannotUseWithoutRepeatingIt(t *testing.T) {
	for _, u := range []string{"", "/relative?X-Amz-Signature=SECRETSIG", "s3://bucket/k?X-Amz-Signature=SECRETSIG", "https://h/%zz?X-Amz-Signature=SECRETSIG"} {
		t.Run(u, func(t *testing.T) {
			c, _ := newTestClient(t, "https://platform.invalid")
			e := mustError(t, c.Put(context.Background(), u, []byte("x")))
			if e.Class != ClassRejected || e.Attempts != 0 || strings.Contains(e.Error(), "SECRETSIG") {
				t.Errorf("got %v: %q", e.Class, e)
			}
		})
	}
}

func TestPutThroughAGivenClientUsesThatClientsTransport(t *testing.T) {
	var used bool
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(store.Close)
	inner := http.DefaultTransport
	given := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used = true
		return inner.RoundTrip(r)
	})}
	c, _ := newTestClient(t, "https://platform.invalid", func(o *Options) { o.PutClient = given })
	if err := c.Put(context.Background(), store.URL+"/k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if !used {
		t.Error("the given PUT client was not used")
	}
}
