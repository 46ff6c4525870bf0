// Package memstorage is a storage extension's client over a map, for the
// tests of what the exporter keeps in storage. One Client outlives the
// stores and exporters built on it, as file_storage's file outlives a
// collector, so a test restarts an exporter on the same data.
package memstorage

import (
	"context"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Client is a storage.Client over a map; safe for concurrent use.
type Client struct {
	mu   sync.Mutex
	data map[string][]byte
}

var _ storage.Client = (*Client)(nil)

// New returns an empty Client.
func New() *Client { return &Client{data: map[string][]byte{}} }

func (c *Client) Get(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data[key], nil
}

func (c *Client) Set(_ context.Context, key string, value []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.data[key] = append([]byte(nil), value...)
	return nil
}

func (c *Client) Delete(_ context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.data, key)
	return nil
}

// Batch runs ops in order, as one transaction would.
func (c *Client) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		var err error
		switch op.Type {
		case storage.Get:
			op.Value, err = c.Get(ctx, op.Key)
		case storage.Set:
			err = c.Set(ctx, op.Key, op.Value)
		case storage.Delete:
			err = c.Delete(ctx, op.Key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Close does nothing: the data stays for the next user.
func (*Client) Close(context.Context) error { return nil }

// Keys counts the keys that start with prefix.
func (c *Client) Keys(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.data {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}
