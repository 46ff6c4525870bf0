package offlinesync

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// JournalFile is the sync's record in the run directory.
const JournalFile = "sync.json"

// journalVersion changes when a journal could no longer be read the same way.
const journalVersion = 1

// Journal is sync.json: how far the run got onto the platform.
type Journal struct {
	Version int `json:"version"`
	// Endpoint is the API prefix RunID lives on: a run id means nothing on
	// another platform, so a sync to another endpoint is refused.
	Endpoint string `json:"endpoint"`
	RunID    string `json:"run_id,omitempty"`
	Attached bool   `json:"attached,omitempty"`
	// MetricsOffset is the byte offset in metrics.jsonl past the last line
	// posted (or refused); MetricsPosted counts the posts.
	MetricsOffset  int64     `json:"metrics_offset"`
	MetricsPosted  int64     `json:"metrics_posted"`
	MetricsRefused []Refusal `json:"metrics_refused,omitempty"`
	// Objects are by file name.
	Objects map[string]*ObjectEntry `json:"objects,omitempty"`
	// ClosedOut is the status the run was closed out with on the
	// platform; "" while it is open.
	ClosedOut string    `json:"closed_out,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Refusal is an item the platform refused for good: sending it again
// would get the same answer, so it is recorded and not retried.
type Refusal struct {
	Offset int64  `json:"offset,omitempty"`
	Error  string `json:"error"`
}

// ObjectEntry is one object's progress.
type ObjectEntry struct {
	Step        int64     `json:"step"`
	Range       int64     `json:"range"`
	Bytes       int64     `json:"bytes,omitempty"`
	Key         string    `json:"key,omitempty"`
	URL         string    `json:"url,omitempty"`
	PresignedAt time.Time `json:"presigned_at,omitzero"`
	ExpiresIn   float64   `json:"expires_in_seconds,omitempty"`
	Put         bool      `json:"put,omitempty"`
	Confirmed   bool      `json:"confirmed,omitempty"`
	Refused     string    `json:"refused,omitempty"`
}

// done says the object needs nothing more.
func (o *ObjectEntry) done() bool { return o != nil && (o.Confirmed || o.Refused != "") }

func (o *ObjectEntry) object() platform.Object {
	return platform.Object{
		Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key, PresignedAt: o.PresignedAt,
		ExpiresIn: time.Duration(o.ExpiresIn * float64(time.Second)), Put: o.Put,
	}
}

func (o *ObjectEntry) progress(p platform.Object) {
	o.URL, o.Key, o.PresignedAt, o.ExpiresIn, o.Put = p.URL, p.Key, p.PresignedAt, p.ExpiresIn.Seconds(), p.Put
}

// loadJournal reads dir's journal; a run never synced has a fresh one.
func loadJournal(dir string) (*Journal, error) {
	raw, err := os.ReadFile(filepath.Join(dir, JournalFile))
	if errors.Is(err, os.ErrNotExist) {
		return &Journal{Version: journalVersion, Objects: map[string]*ObjectEntry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	var j Journal
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("%s: %w (it is the sync's record of what was sent: do not edit it)", JournalFile, err)
	}
	if j.Version != journalVersion {
		return nil, fmt.Errorf("%s is version %d; this prime-sync reads version %d", JournalFile, j.Version, journalVersion)
	}
	if j.Objects == nil {
		j.Objects = map[string]*ObjectEntry{}
	}
	return &j, nil
}

// save replaces dir's journal atomically; durable also flushes it to disk
// (see the package doc for which writes are).
func (j *Journal) save(dir string, durable bool) error {
	raw, err := j.marshal()
	if err != nil {
		return err
	}
	return platform.WriteFileAtomic(dir, JournalFile, raw, durable)
}

func (j *Journal) marshal() ([]byte, error) {
	j.UpdatedAt = time.Now().UTC()
	raw, err := json.MarshalIndent(j, "", "  ")
	return append(raw, '\n'), err
}

// journalWriter writes a journal that several uploads change at once.
// Writes, flushes above all, are slow next to the changes, so a change
// never waits for another's write: it waits only until a write that holds
// it is on disk (durably, when it asks so). While one write runs, the
// changes made meanwhile go out together in the next: one flush for many.
type journalWriter struct {
	dir string
	mu  *sync.Mutex // the run's: guards the journal and changed
	j   *Journal

	changed uint64 // changes made, under mu

	writeMu sync.Mutex // one write at a time; guards the two below
	written uint64     // changes on disk
	flushed uint64     // changes flushed to disk
}

// commit writes the changes made so far, at least, to the journal file.
// Call it after a change, without holding mu.
func (w *journalWriter) commit(durable bool) error {
	w.mu.Lock()
	w.changed++
	mine := w.changed
	w.mu.Unlock()

	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if w.written >= mine && (!durable || w.flushed >= mine) {
		return nil // a later write carried this change
	}
	w.mu.Lock()
	raw, err := w.j.marshal()
	upTo := w.changed
	w.mu.Unlock()
	if err != nil {
		return err
	}
	if err := platform.WriteFileAtomic(w.dir, JournalFile, raw, durable); err != nil {
		return err
	}
	w.written = upTo
	if durable {
		w.flushed = upTo
	}
	return nil
}
