// Package platformtest is for tests only: a platform.Objects that stores
// objects in the online backend's three requests, in order, and fails the
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

// Sink stores objects as platform.Online does: presign, PUT and confirm,
// saving the progress after each of the first two and resuming from what
// an earlier attempt saved. Each request is told to Note (when set) before
// it is answered; a request fails with the next error Fail scripts for it.
type Sink struct {
	Note func(request string)

	mu   sync.Mutex
	Fail map[string][]error
}

var _ platform.Objects = (*Sink)(nil)

func (s *Sink) Store(_ context.Context, runID string, obj platform.Object, _ []byte, save func(platform.Object)) error {
	if obj.URL == "" {
		if err := s.request("presign"); err != nil {
			return err
		}
		obj.URL = fmt.Sprintf("https://objects/%s/%d/%d", runID, obj.Step, obj.Range)
		save(obj)
	}
	if !obj.Put {
		if err := s.request("put"); err != nil {
			return err
		}
		obj.Put = true
		save(obj)
	}
	return s.request("confirm")
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
