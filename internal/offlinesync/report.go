package offlinesync

import (
	"errors"
	"fmt"
	"strings"
)

// Outcome is how a run's sync ended, in the order of the exit codes.
type Outcome int

const (
	// Done: everything there was is on the platform (a live run stays
	// open until a later sync finds it ended).
	Done Outcome = iota
	// Left: something is still to send; running the sync again goes on.
	Left
	// Misconfigured: the sync cannot go on until a flag, a variable or
	// the directory is fixed; the error says which.
	Misconfigured
)

// ExitCode is prime-sync's exit status for the worst outcome of its runs.
func ExitCode(reports []Report) int {
	worst := Done
	for _, r := range reports {
		worst = max(worst, r.Outcome)
	}
	return int(worst)
}

// Unfinished is the sync's closing word when runs are left: one line per
// outcome naming the runs ("" when every run synced). Each run's own line
// says why.
func Unfinished(reports []Report) string {
	var left, fix []string
	for _, r := range reports {
		switch r.Outcome {
		case Left:
			left = append(left, r.Dir)
		case Misconfigured:
			fix = append(fix, r.Dir)
		}
	}
	var b strings.Builder
	if len(left) > 0 {
		fmt.Fprintf(&b, "%d of %d run(s) not finished, run prime-sync again: %s\n", len(left), len(reports), strings.Join(left, ", "))
	}
	if len(fix) > 0 {
		fmt.Fprintf(&b, "%d of %d run(s) need a fix first (see their lines): %s\n", len(fix), len(reports), strings.Join(fix, ", "))
	}
	return b.String()
}

// Report is what a sync did for one run directory.
type Report struct {
	Dir       string
	Identity  string
	RunID     string
	Dashboard string
	Outcome   Outcome
	Err       error
	// Created or Attached says how the platform run came to be in this
	// sync ("" when an earlier sync did it).
	Created, Attached bool
	MetricsPosted     int64
	ObjectsUploaded   int
	Bytes             int64 // metrics and object bytes sent
	Refused           int   // items the platform refused for good, in the journal
	// State is the run's close-out: "completed", "failed", or "open" for a
	// run still training.
	State string
	// Plan is what a dry run would send.
	Plan []string
}

// misconfigured marks an error that no retry fixes.
type misconfigured struct{ error }

func (m misconfigured) Unwrap() error { return m.error }

func configError(format string, args ...any) error {
	return misconfigured{fmt.Errorf(format, args...)}
}

func outcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Done
	case errors.As(err, new(misconfigured)):
		return Misconfigured
	}
	return Left
}

// Summary is the report's one line: directory, run id, dashboard, counts.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\trun %s", r.Dir, orDash(r.RunID))
	if r.Dashboard != "" {
		fmt.Fprintf(&b, "\t%s", r.Dashboard)
	}
	fmt.Fprintf(&b, "\tmetrics %d\tobjects %d\t%s", r.MetricsPosted, r.ObjectsUploaded, humanBytes(r.Bytes))
	if r.Refused > 0 {
		fmt.Fprintf(&b, "\trefused %d (see %s)", r.Refused, JournalFile)
	}
	switch {
	case r.Err != nil && r.Outcome == Left:
		fmt.Fprintf(&b, "\tnot finished, run again: %v", r.Err)
	case r.Err != nil:
		fmt.Fprintf(&b, "\terror: %v", r.Err)
	case r.State != "":
		fmt.Fprintf(&b, "\t%s", r.State)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// humanBytes renders n in SI units, as the progress bar does.
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
