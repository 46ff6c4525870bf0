package report

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Filter picks, among the runs that the paths name, the ones to compare. A
// zero Filter picks them all.
type Filter struct {
	// Name is a glob (path.Match: *, ?, [a-z]) matched against the run's
	// name, its id and its directory's name; any of the three will do.
	Name string
	// Kind is KindTrain or KindEval; "" takes either.
	Kind string
	// Since and Until bound the run's creation time: Since ≤ created <
	// Until. A zero bound is open.
	Since, Until time.Time
}

// Valid says what is wrong with f, naming the flag to fix.
func (f Filter) Valid() error {
	if _, err := path.Match(f.Name, ""); err != nil {
		return fmt.Errorf("-name %q is not a glob: %w", f.Name, err)
	}
	if f.Kind != "" && f.Kind != KindTrain && f.Kind != KindEval {
		return fmt.Errorf("-kind %q: want %s or %s", f.Kind, KindTrain, KindEval)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return fmt.Errorf("-since %s is not before -until %s", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	return nil
}

// String says what f keeps, for the page; "" when it keeps everything.
func (f Filter) String() string {
	var parts []string
	if f.Name != "" {
		parts = append(parts, "name "+f.Name)
	}
	if f.Kind != "" {
		parts = append(parts, "kind "+f.Kind)
	}
	if !f.Since.IsZero() {
		parts = append(parts, "created since "+stamp(f.Since))
	}
	if !f.Until.IsZero() {
		parts = append(parts, "created before "+stamp(f.Until))
	}
	return strings.Join(parts, ", ")
}

func (f Filter) keeps(dir string, h runHead) bool {
	if f.Name != "" && !matches(f.Name, h.name) && !matches(f.Name, h.ID) && !matches(f.Name, filepath.Base(dir)) {
		return false
	}
	if f.Kind != "" && h.Kind != f.Kind {
		return false
	}
	if !f.Since.IsZero() && h.created.Before(f.Since) {
		return false
	}
	return f.Until.IsZero() || h.created.Before(f.Until)
}

func matches(pattern, s string) bool {
	ok, _ := path.Match(pattern, s)
	return s != "" && ok
}

// Selection is the runs a comparison takes, read as far as their record
// files, and those it passed over.
type Selection struct {
	Kind    string
	Runs    []Selected
	Skipped []Skipped
	Found   int    // the runs the paths named, before the filter
	Filter  string // what the filter kept, "" for all
}

// Selected is one run to compare.
type Selected struct {
	Dir  string
	head runHead
}

// Skipped is a run that is not compared, and why; the page and the
// command both name it.
type Skipped struct {
	Dir    string `json:"dir"`
	Reason string `json:"reason"`
}

// ErrTooFew is a selection of fewer than two runs: nothing to compare.
var ErrTooFew = errors.New("compare needs at least two runs")

// SelectRuns finds the runs that paths name (a run directory, or a
// directory of them, as prime-sync's own paths are), reads each one's
// record file and keeps those f keeps. A run whose record cannot be read is
// skipped and said. Runs of both kinds are refused: a training run's curves
// and step tables have nothing to set beside an evaluation's summary and
// samples, so a page of both would compare only their headers; the error
// names which runs are which and the flag that picks one kind.
func SelectRuns(paths []string, f Filter) (*Selection, error) {
	if err := f.Valid(); err != nil {
		return nil, err
	}
	sel := &Selection{Filter: f.String()}
	seen := map[string]bool{}
	byKind := map[string][]string{}
	// The runs of a path in the order they were created (a directory
	// lists them by id, which is random), the paths in the order given: a
	// baseline named first stays first.
	for _, p := range paths {
		dirs, err := RunDirs([]string{p})
		if err != nil {
			return nil, err
		}
		var runs []Selected
		for _, dir := range dirs {
			if abs, err := filepath.Abs(dir); err == nil {
				if seen[abs] {
					continue
				}
				seen[abs] = true
			}
			sel.Found++
			h, err := readHead(dir)
			if err != nil {
				sel.Skipped = append(sel.Skipped, Skipped{Dir: dir, Reason: err.Error()})
				continue
			}
			if f.keeps(dir, h) {
				runs = append(runs, Selected{Dir: dir, head: h})
				byKind[h.Kind] = append(byKind[h.Kind], dir)
			}
		}
		slices.SortStableFunc(runs, func(a, b Selected) int { return a.head.created.Compare(b.head.created) })
		sel.Runs = append(sel.Runs, runs...)
	}
	if len(byKind) > 1 {
		return nil, fmt.Errorf("runs of two kinds: training runs %s; evaluations %s. A training run's curves and step samples "+
			"have nothing to set beside an evaluation's summary and samples: compare one kind at a time (-kind %s or -kind %s)",
			strings.Join(byKind[KindTrain], ", "), strings.Join(byKind[KindEval], ", "), KindTrain, KindEval)
	}
	if len(sel.Runs) < 2 {
		why := fmt.Sprintf("%d of the %d run(s) found", len(sel.Runs), sel.Found)
		if sel.Filter != "" {
			why += " match " + sel.Filter
		} else {
			why += " can be read"
		}
		for _, s := range sel.Skipped {
			why += fmt.Sprintf("; %s: %s", s.Dir, s.Reason)
		}
		return nil, fmt.Errorf("%w: %s", ErrTooFew, why)
	}
	sel.Kind = sel.Runs[0].head.Kind
	return sel, nil
}
