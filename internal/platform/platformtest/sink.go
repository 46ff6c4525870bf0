// Package platformtest is for tests only: a platform.Objects that stores
// objects in the online backend's requests and stages, and fails the
// ones a test scripts (Sink), and a reader of the sample objects the fake
// platform received (Rows, Objects). The uploader's tests and the run
// lifecycle's both drive their side of an upload against the Sink, so both
// see the same sequence the platform does; the tests that upload over real
// HTTP, here and at the root, read back what arrived with Objects.
package platformtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// Sink stores objects as platform.Online does, in two stages: the upload
// (a "presign" when the object has no URL, then a "put") and the
// "confirm", resuming from the progress it is given. Each request is told
// to Note (when set) before it is answered; a request fails with the next
// error Fail scripts for it. A failed put returns the object with its new
// URL, as Online does, so that the next attempt puts to it again.
type Sink struct {
	Note func(request string)

	mu   sync.Mutex
	Fail map[string][]error
}

var _ platform.Objects = (*Sink)(nil)

func (s *Sink) Advance(_ context.Context, runID string, obj platform.Object, _ []byte) (platform.Object, bool, error) {
	if obj.Put {
		return obj, true, s.request("confirm")
	}
	if obj.URL == "" {
		if err := s.request("presign"); err != nil {
			return obj, false, err
		}
		obj.URL = fmt.Sprintf("https://objects/%s/%d/%d", runID, obj.Step, obj.Range)
		obj.Key = obj.URL
	}
	if err := s.request("put"); err != nil {
		return obj, false, err
	}
	obj.Put = true
	return obj, false, nil
}

func (s *Sink) request(name string) error {
	if s.Note != nil {
		s.Note(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if errs := s.Fail[name]; len(errs) > 0 {
		s.Fail[name] = errs[1:]
		return errs[0]
	}
	return nil
}
