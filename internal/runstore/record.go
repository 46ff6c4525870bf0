package runstore

import (
	"encoding/json"
	"time"
)

// SavedRun is one run's record in a store. It is small, and written when
// the run changes, not per object: an object's upload has a key of its own
// (objects.go), and the delivered set has a value per step.
type SavedRun struct {
	Key      string `json:"key"`
	Source   string `json:"source"`
	Value    string `json:"value"`
	Attach   bool   `json:"attach,omitempty"`
	ID       string `json:"id,omitempty"`
	Team     string `json:"team,omitempty"`
	State    string `json:"state,omitempty"` // "", StateEnding, StateClosing, StateClosed
	EndState string `json:"end_status,omitempty"`
	EndWhy   string `json:"end_reason,omitempty"`
	// Traces is the run's Prime Traces routing state.
	Traces Traces `json:"traces,omitzero"`
	// SeenAt is when any collector last took data for the run; only a
	// shared store keeps it.
	SeenAt time.Time `json:"-"`
	// RangesFrom is where the run's free sample_id ranges begin: a
	// collector that restores the run counts every step from it.
	RangesFrom int64 `json:"ranges_from,omitempty"`
	// Ranges and Pending are what a record written before RangesFrom kept
	// instead: the next sequential range per step (RangeFloorKey carried
	// the range floor beside them), and the uploads with a range but no
	// confirm, by object fingerprint (hex). They are read, never written.
	Ranges  map[string]int64       `json:"ranges,omitempty"`
	Pending map[string]SavedObject `json:"pending,omitempty"`
	// Eval is an evaluation's config and summary.
	Eval *SavedEval `json:"eval,omitempty"`
}

// Saved run states. Only a shared store is told of closing: there other
// collectors must refuse the run's data while its close-out drains, and a
// restart of the fleet must finish a close-out that was cut short.
const (
	StateEnding  = "ending"
	StateClosing = "closing"
	StateClosed  = "closed"
)

// validSavedState says a record's state is one a store writes.
func validSavedState(s string) bool {
	return s == "" || s == StateEnding || s == StateClosing || s == StateClosed
}

// RangeFloorKey carries a run's range floor in a saved record's ranges,
// beside the steps; a record without it has no floor.
const RangeFloorKey = "floor"

// Traces is where a run's episode documents go when Prime Traces is on.
// The platform's SDK switches a run to the sample table when Prime Traces
// answers that the account has no Prime Traces before anything of the run
// was committed, and never after: a run's documents are then in one place.
// Both facts are saved, so a restart keeps the choice.
type Traces struct {
	// Committed: Prime Traces committed a batch of the run.
	Committed bool `json:"committed,omitempty"`
	// OnTable: the run's documents go to the sample table instead.
	OnTable bool `json:"on_table,omitempty"`
}

// SavedObject is a pending upload in a store.
type SavedObject struct {
	// RunID is the platform run the upload was presigned for: a run key
	// that names another run since (its record was lost) does not resume
	// it. Records before it have none.
	RunID       string    `json:"run_id,omitempty"`
	Step        int64     `json:"step"`
	Range       int64     `json:"range"`
	URL         string    `json:"url,omitempty"`
	Key         string    `json:"key,omitempty"`
	PresignedAt time.Time `json:"presigned_at,omitzero"`
	ExpiresIn   int64     `json:"expires_in_s,omitempty"`
	Put         bool      `json:"put,omitempty"`
}

// SavedEval is an evaluation's part of its store record. A shared store
// (Redis) does not keep it: there each collector's summary covers the
// episodes it delivered, and the close-out sends the closer's.
type SavedEval struct {
	Metadata map[string]any  `json:"metadata,omitempty"`
	Summary  json.RawMessage `json:"summary,omitempty"`
	Counters json.RawMessage `json:"counters,omitempty"`
}

// Kinds of holds in a shared store, the first letter of a hold's name:
// the script that counts a run's holds tells them apart by it.
const (
	HoldLease = 'l' // a push holds a lease on the run
	HoldRetry = 'r' // a push handed the run's data back to the collector's retry
)

// HeartbeatTTL is how long a collector's holds count after its last
// heartbeat (Alive): a killed collector's holds delay a close-out by at
// most this. Taking a hold renews the heartbeat for as long.
const HeartbeatTTL = 15 * time.Second
