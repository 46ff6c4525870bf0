package memstorage

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Extension is a storage extension that gives each client name its own
// Client, as file_storage gives each its own file. It outlives the
// exporters that use it.
type Extension struct {
	component.StartFunc
	component.ShutdownFunc
	mu      sync.Mutex
	clients map[string]*Client
}

var _ storage.Extension = (*Extension)(nil)

// NewExtension returns an Extension with no data.
func NewExtension() *Extension { return &Extension{clients: map[string]*Client{}} }

func (e *Extension) GetClient(_ context.Context, _ component.Kind, _ component.ID, name string) (storage.Client, error) {
	return e.Client(name), nil
}

// Client is the client of name, empty when none had it before.
func (e *Extension) Client(name string) *Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.clients[name] == nil {
		e.clients[name] = New()
	}
	return e.clients[name]
}
