// Package memstorage is a storage extension's client over a map, for the
// tests of what the exporter keeps in storage. One Client outlives the
// stores and exporters built on it, as file_storage's file outlives a
// collector, so a test restarts an exporter on the same data.
package memstorage

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Client is a storage.Client over a map; safe for concurrent use.
type Client struct {
	mu   sync.Mutex
	data map[string][]byte
	// full is the file a full disk refuses writes to ("" while not full).
	full string
}

var (
	_ storage.Client = (*Client)(nil)
	_ storage.Walker = (*Client)(nil)
)

// New returns an empty Client.
func New() *Client { return &Client{data: map[string][]byte{}} }

func (c *Client) Get(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data[key], nil
}

// Fill makes every later write fail as a full disk under file does in
// file_storage (bbolt's write of a page: a *fs.PathError wrapping ENOSPC),
// and write nothing, until Free.
func (c *Client) Fill(file string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.full = file
}

// Free ends Fill: writes are taken again.
func (c *Client) Free() { c.Fill("") }

func (c *Client) refused() error {
	if c.full == "" {
		return nil
	}
	return &fs.PathError{Op: "write", Path: c.full, Err: syscall.ENOSPC}
}

func (c *Client) Set(_ context.Context, key string, value []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused(); err != nil {
		return err
	}
	c.data[key] = append([]byte(nil), value...)
	return nil
}

func (c *Client) Delete(_ context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused(); err != nil {
		return err
	}
	delete(c.data, key)
	return nil
}

// Batch runs ops in order, as one transaction would: a batch that writes
// on a full disk writes nothing.
func (c *Client) Batch(ctx context.Context, ops ...*storage.Operation) error {
	c.mu.Lock()
	full := c.refused()
	c.mu.Unlock()
	if full != nil && slices.ContainsFunc(ops, func(op *storage.Operation) bool { return op.Type != storage.Get }) {
		return full
	}
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

// Walk calls fn for every key in key order, as file_storage's client
// does, then applies the operations fn returned.
func (c *Client) Walk(ctx context.Context, fn storage.WalkFunc) error {
	c.mu.Lock()
	keys := slices.Sorted(maps.Keys(c.data))
	c.mu.Unlock()
	var ops []*storage.Operation
	for _, k := range keys {
		v, _ := c.Get(ctx, k)
		more, err := fn(k, v)
		ops = append(ops, more...)
		if errors.Is(err, storage.SkipAll) {
			break
		}
		if err != nil {
			return err
		}
	}
	return c.Batch(ctx, ops...)
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
