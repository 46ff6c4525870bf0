// Package queuestore keeps the exporterhelper's persistent queue from
// dropping a request when its storage refuses writes (a full disk).
//
// The queue (exporterhelper v0.165.0) takes a request out of storage in one
// batch: it writes its metadata (the read index moved on) and reads the
// item. When the write fails, it drops the item from this process: the
// read index has moved on in memory, the next metadata write that succeeds
// records that, and the item is never sent. Marking a request done is the
// same kind of batch (metadata written, item deleted), and when it fails the
// item stays in storage, orphaned. Upstream knows the done half
// (opentelemetry-collector#7198, #8115); the read half loses data.
//
// A batch that adds no item (it only writes the metadata, reads items and
// deletes them) only records progress. When storage refuses it, this
// client performs its reads and keeps its writes for later: the metadata
// (the newest replaces an older one) and the deletes go out ahead of the
// next batch storage takes, or at Close. Until then storage holds an older
// read position, so a crash meanwhile sends those requests again: at least
// once, never lost (the exporter already takes a request twice: episodes
// are delivered once by their fingerprints, a step's metrics post again
// with the same values). A batch that adds an item still fails, so the
// receiver refuses data the disk cannot hold, and the sender retries.
//
// The wrapping reaches the queue through the host its Start is given: the
// host's storage extension is replaced by one whose clients for the
// queue's signals defer; every other client (the run registry's) is the
// extension's own.
package queuestore

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// metadataKey is the key of the persistent queue's metadata in
// exporterhelper v0.165.0 (internal/queue/persistent_queue.go).
const metadataKey = "qmv0"

// Host returns host with the storage extension id replaced by one whose
// clients for storage name signal (the queue asks for its signal's name)
// defer progress writes that storage refuses. host is returned as it is
// when it has no such storage extension: the queue then fails its own
// start with its own error.
func Host(host component.Host, id component.ID, signal string, logger *zap.Logger) component.Host {
	ext, ok := host.GetExtensions()[id].(storage.Extension)
	if !ok {
		return host
	}
	exts := make(map[component.ID]component.Component, len(host.GetExtensions()))
	for k, v := range host.GetExtensions() {
		exts[k] = v
	}
	exts[id] = extension{Extension: ext, signal: signal, logger: logger.With(zap.String("storage", id.String()), zap.String("queue", signal))}
	return wrappedHost{Host: host, exts: exts}
}

// wrappedHost forwards status reports: the exporter reports its health
// through the host it is started with.
type wrappedHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h wrappedHost) GetExtensions() map[component.ID]component.Component { return h.exts }

func (h wrappedHost) Report(ev *componentstatus.Event) { componentstatus.ReportStatus(h.Host, ev) }

type extension struct {
	storage.Extension
	signal string
	logger *zap.Logger
}

func (e extension) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := e.Extension.GetClient(ctx, kind, id, name)
	if err != nil || kind != component.KindExporter || name != e.signal {
		return c, err
	}
	return NewClient(c, e.logger), nil
}

// Client defers the queue's progress writes that storage refuses; see the
// package doc. Safe for concurrent use.
type Client struct {
	storage.Client
	logger *zap.Logger

	mu       sync.Mutex
	metadata []byte   // the newest metadata write storage refused; nil if none
	deletes  []string // item deletes storage refused, in order
}

// NewClient wraps a persistent queue's storage client.
func NewClient(c storage.Client, logger *zap.Logger) *Client {
	return &Client{Client: c, logger: logger}
}

// Batch applies ops after any deferred writes, in one batch.
func (c *Client) Batch(ctx context.Context, ops ...*storage.Operation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.Client.Batch(ctx, append(c.pending(), ops...)...)
	if err == nil {
		c.settled()
		return nil
	}
	if !progressOnly(ops) || ctx.Err() != nil {
		return err
	}
	for _, op := range ops {
		if op.Type != storage.Get {
			continue
		}
		v, gerr := c.Client.Get(ctx, op.Key)
		if gerr != nil {
			return errors.Join(err, gerr)
		}
		op.Value = v
	}
	if c.metadata == nil && len(c.deletes) == 0 {
		c.logger.Warn("Storage refuses the sending queue's writes: the queue goes on, keeping how far it has read in memory until storage takes writes again; "+
			"a crash before then sends those requests again (nothing is lost), and data that does not fit is refused at the receiver", zap.Error(err))
	}
	for _, op := range ops {
		switch {
		case op.Type == storage.Set:
			c.metadata = op.Value
		case op.Type == storage.Delete:
			c.deletes = append(c.deletes, op.Key)
		}
	}
	return nil
}

// Close writes what was deferred, if storage takes it now, then closes.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if p := c.pending(); len(p) > 0 {
		if err := c.Client.Batch(ctx, p...); err != nil {
			c.logger.Warn("Storage still refuses the sending queue's writes at shutdown: the next start sends again what was sent since it refused them", zap.Error(err))
		} else {
			c.settled()
		}
	}
	c.mu.Unlock()
	return c.Client.Close(ctx)
}

// Deferred reports whether writes wait for storage to take them.
func (c *Client) Deferred() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metadata != nil || len(c.deletes) > 0
}

func (c *Client) pending() []*storage.Operation {
	var ops []*storage.Operation
	if c.metadata != nil {
		ops = append(ops, storage.SetOperation(metadataKey, c.metadata))
	}
	for _, k := range c.deletes {
		ops = append(ops, storage.DeleteOperation(k))
	}
	return ops
}

func (c *Client) settled() {
	if c.metadata != nil || len(c.deletes) > 0 {
		c.logger.Info("Storage takes the sending queue's writes again")
	}
	c.metadata, c.deletes = nil, nil
}

// progressOnly reports whether ops only record the queue's progress: the
// only write is the metadata, the rest read or delete items.
func progressOnly(ops []*storage.Operation) bool {
	for _, op := range ops {
		if op.Type == storage.Set && op.Key != metadataKey {
			return false
		}
	}
	return true
}
