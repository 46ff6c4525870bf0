package runs

import "context"

// Team is the team the run was created for; for an attached run, the
// resource's prime.run.team_id or the configured team_id ("" when none).
func (l Lease) Team() string {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.team
}

// DocumentsOnTable reports whether the run's documents go to the sample
// table instead of Prime Traces.
func (l Lease) DocumentsOnTable() bool {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.traces.OnTable
}

// TracesCommitted records that Prime Traces committed a batch of the run:
// from then on nothing switches the run to the table.
func (l Lease) TracesCommitted(ctx context.Context) {
	l.r.mu.Lock()
	changed := !l.r.traces.Committed
	l.r.traces.Committed = true
	l.r.mu.Unlock()
	if changed {
		l.g.fleet.records.save(ctx, l.r)
	}
}

// MoveDocumentsToTable switches the run's documents to the sample table,
// unless Prime Traces already committed a batch of it. It reports whether
// the run's documents now go to the table, and whether this call switched
// them (for a one-time log line).
func (l Lease) MoveDocumentsToTable(ctx context.Context) (onTable, switched bool) {
	l.r.mu.Lock()
	if l.r.traces.Committed || l.r.traces.OnTable {
		onTable = l.r.traces.OnTable
		l.r.mu.Unlock()
		return onTable, false
	}
	l.r.traces.OnTable = true
	l.r.mu.Unlock()
	l.g.fleet.records.save(ctx, l.r)
	return true, true
}
