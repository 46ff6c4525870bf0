package rft

import (
	"context"
	"net/http"
	"testing"
)

// presignTo is a platform that presigns every object to store's /k.
func presignTo(t *testing.T, store *fakeServer, rep reply) *fakeServer {
	t.Helper()
	if rep.status == 0 {
		rep = reply{status: 200, body: `{"data":{"presignedUrl":"` + store.URL + `/k?X-Amz-Signature=abc","s3Key":"k","expiresIn":900}}`}
	}
	return newFakeServer(t, always(rep))
}

func TestPutSampleOfAFreshObjectPresignsThenPuts(t *testing.T) {
	store := newFakeServer(t, always(reply{status: 200}))
	api := presignTo(t, store, reply{})
	c, _ := newTestClient(t, api.URL)
	p, err := c.PutSample(context.Background(), "run-abc", 10, Presigned{}, []byte("PAR1"))
	if err != nil {
		t.Fatal(err)
	}
	if p.URL != store.URL+"/k?X-Amz-Signature=abc" || p.Key != "k" || p.ExpiresIn == 0 {
		t.Errorf("got %+v", p)
	}
	if n := len(api.requests()); n != 1 {
		t.Errorf("%d presigns, want 1", n)
	}
	if r := store.requests(); len(r) != 1 || r[0].Method != http.MethodPut || string(r[0].Body) != "PAR1" {
		t.Errorf("store saw %+v", r)
	}
}

func TestPutSampleWithAURLPutsWithoutPresigning(t *testing.T) {
	store := newFakeServer(t, always(reply{status: 200}))
	api := presignTo(t, store, reply{})
	c, _ := newTestClient(t, api.URL)
	given := Presigned{URL: store.URL + "/given?X-Amz-Signature=g", Key: "given"}
	p, err := c.PutSample(context.Background(), "run-abc", 10, given, []byte("PAR1"))
	if err != nil || p != given {
		t.Fatalf("got %+v, %v; want the given URL back", p, err)
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("%d presigns, want none", n)
	}
	if r := store.requests(); len(r) != 1 || r[0].Path != "/given" {
		t.Errorf("store saw %+v", r)
	}
}

func TestPutSampleWhosePUTFailsReturnsThePresignedURLWithThePutsError(t *testing.T) {
	store := newFakeServer(t, always(reply{status: 403}))
	api := presignTo(t, store, reply{})
	c, _ := newTestClient(t, api.URL)
	p, err := c.PutSample(context.Background(), "run-abc", 10, Presigned{}, []byte("PAR1"))
	e := mustError(t, err)
	if e.Op != opPut || e.StatusCode != 403 {
		t.Errorf("got %v, want the PUT's 403", e)
	}
	if p.URL != store.URL+"/k?X-Amz-Signature=abc" || p.Key != "k" {
		t.Errorf("got %+v, want the presigned URL to PUT to again", p)
	}
}

func TestPutSampleWhosePresignFailsReturnsNoURLAndPutsNothing(t *testing.T) {
	store := newFakeServer(t, always(reply{status: 200}))
	api := presignTo(t, store, reply{status: 404, body: `{"detail":"run not found"}`})
	c, _ := newTestClient(t, api.URL)
	p, err := c.PutSample(context.Background(), "run-abc", 10, Presigned{}, []byte("PAR1"))
	e := mustError(t, err)
	if e.Op != opPresign || e.StatusCode != 404 {
		t.Errorf("got %v, want the presign's 404", e)
	}
	if p != (Presigned{}) {
		t.Errorf("got %+v, want no URL", p)
	}
	if n := len(store.requests()); n != 0 {
		t.Errorf("%d PUTs after a failed presign, want none", n)
	}
}
