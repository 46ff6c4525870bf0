package trainerlib

import (
	"errors"
	"sync"

	"go.opentelemetry.io/otel"
)

// ErrorSink collects the errors the SDK reports asynchronously through the
// OTel error handler, so that none of them can go unnoticed.
type ErrorSink struct {
	mu   sync.Mutex
	errs []error
	// taken counts the errors TakeNew has returned.
	taken int
}

// CollectErrors makes a new sink the global OTel error handler: batched
// exports report their failures only there. restore puts the previous
// handler back.
func CollectErrors() (sink *ErrorSink, restore func()) {
	sink = &ErrorSink{}
	previous := otel.GetErrorHandler()
	otel.SetErrorHandler(sink)
	return sink, func() { otel.SetErrorHandler(previous) }
}

func (s *ErrorSink) Handle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

// Err joins every error reported.
func (s *ErrorSink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// TakeNew joins the errors reported since its last call.
func (s *ErrorSink) TakeNew() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.errs[s.taken:]...)
	s.taken = len(s.errs)
	return err
}
