package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/primeintellect/primeexporter/internal/offlinesync"
	"github.com/primeintellect/primeexporter/internal/platform"
)

// Kinds of run a directory holds.
const (
	KindTrain = "train"
	KindEval  = "eval"
)

// Header is the top of the page: what the run is and how it stands.
type Header struct {
	Title        string
	Kind         string // KindTrain or KindEval
	ID, Identity string
	Status       string
	Error        string // the reason a run ended other than completed
	ExitCode     string
	Model        string
	Environments []string
	Fields       [][2]string // further facts of the spec, label and value
	Config       string      // the run's config as indented JSON
	Created      string
	Updated      string
	Finished     string
	Synced       bool
	Sync         string // whether and where the run was synced
}

// Report is everything one page shows.
type Report struct {
	Header   Header
	Series   []*Series
	BadLines int     // metrics.jsonl lines that were not posts
	Start    float64 // the run's first row, unix seconds (metricsFile.Start)
	Steps    []StepSamples
	Eval     *Eval
}

// Eval is an evaluation's own part: its summary and samples.
type Eval struct {
	Summary    [][2]string // flattened: avg_metrics.<k>
	Samples    []Sample
	BadSamples int
}

// Load reads the run in dir: a training run (run.json) or an offline
// evaluation (evaluation.json).
func Load(dir string) (*Report, error) {
	h, err := readHead(dir)
	if err != nil {
		return nil, err
	}
	if h.Kind == KindEval {
		ev := &Eval{Summary: flatten(h.summary)}
		if ev.Samples, ev.BadSamples, err = readEvalSamples(dir); err != nil {
			return nil, err
		}
		return &Report{Header: h.Header, Eval: ev}, nil
	}
	rep := &Report{Header: h.Header}
	mf, err := readMetricsFile(filepath.Join(dir, platform.MetricsFile))
	if err != nil {
		return nil, err
	}
	rep.Series, rep.BadLines, rep.Start = mf.Series, mf.BadLines, mf.Start
	if rep.Steps, err = readSteps(dir); err != nil {
		return nil, err
	}
	return rep, nil
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// runHead is what a run's record file says: its page's header, and what a
// comparison also weighs (its name, config and creation time).
type runHead struct {
	Header
	name    string         // the spec's name; "" when it has none
	config  map[string]any // the run's config (an evaluation's metadata), numbers as written
	summary map[string]any // an evaluation's summary
	created time.Time
}

// readHead reads the record file of the run in dir, and nothing else.
func readHead(dir string) (runHead, error) {
	switch {
	case isFile(filepath.Join(dir, platform.RunFile)):
		return trainHead(dir)
	case isFile(filepath.Join(dir, platform.EvaluationFile)):
		return evalHead(dir)
	}
	return runHead{}, fmt.Errorf("%s holds neither %s nor %s: it is not a run directory", dir, platform.RunFile, platform.EvaluationFile)
}

func trainHead(dir string) (runHead, error) {
	var rec platform.RunRecord
	if err := readJSON(filepath.Join(dir, platform.RunFile), &rec); err != nil {
		return runHead{}, err
	}
	h := Header{Kind: KindTrain, ID: rec.ID, Identity: rec.Identity, Status: rec.Status, Error: rec.ErrorMessage,
		Created: stamp(rec.CreatedAt), Updated: stamp(rec.UpdatedAt), Title: rec.ID}
	if rec.ExitCode != nil {
		h.ExitCode = strconv.Itoa(*rec.ExitCode)
	}
	if rec.FinishedAt != nil {
		h.Finished = stamp(*rec.FinishedAt)
	}
	if rec.Attached {
		h.Fields = append(h.Fields, [2]string{"Attached", "yes: the run was created elsewhere; its spec is its launcher's"})
	}
	h.Fields = appendField(h.Fields, "Team", rec.TeamID)
	out := runHead{created: rec.CreatedAt}
	if s := rec.Spec; s != nil {
		h.Title = cmp.Or(s.Name, rec.ID)
		h.Model = s.BaseModel
		for _, e := range s.Environments {
			h.Environments = append(h.Environments, envName(e.ID, e.VersionID))
		}
		h.Fields = appendField(h.Fields, "Max steps", count(s.MaxSteps))
		h.Fields = appendField(h.Fields, "Batch size", count(s.BatchSize))
		h.Fields = appendField(h.Fields, "Rollouts per example", count(s.RolloutsPerExample))
		h.Fields = appendField(h.Fields, "Sequence length", count(s.SeqLen))
		h.Fields = appendField(h.Fields, "W&B", strings.Trim(strings.Join([]string{s.WandbEntity, s.WandbProject, s.WandbRunName}, "/"), "/"))
		h.Config = indent(s.RunConfig)
		out.name, out.config = s.Name, s.RunConfig
	}
	h.Synced, h.Sync = syncState(dir)
	out.Header = h
	return out, nil
}

func evalHead(dir string) (runHead, error) {
	var rec platform.EvaluationRecord
	if err := readJSON(filepath.Join(dir, platform.EvaluationFile), &rec); err != nil {
		return runHead{}, err
	}
	h := Header{Kind: KindEval, ID: rec.ID, Identity: rec.Identity, Status: rec.Status, Error: rec.ErrorMessage,
		Created: stamp(rec.CreatedAt), Updated: stamp(rec.UpdatedAt), Title: rec.ID,
		// prime-sync does not upload evaluations yet (prime-sync.md).
		Sync: "Not synced: prime-sync does not upload evaluations yet."}
	h.Fields = appendField(h.Fields, "Team", rec.TeamID)
	out := runHead{created: rec.CreatedAt, summary: rec.Summary, config: rec.Metadata}
	if s := rec.Spec; s != nil {
		h.Title = cmp.Or(s.Name, rec.ID)
		h.Model = s.ModelName
		for _, e := range s.Environments {
			h.Environments = append(h.Environments, envName(e.ID, e.VersionID))
		}
		h.Fields = appendField(h.Fields, "Dataset", s.Dataset)
		h.Fields = appendField(h.Fields, "Framework", s.Framework)
		h.Fields = appendField(h.Fields, "Tags", strings.Join(s.Tags, ", "))
		h.Fields = appendField(h.Fields, "Description", s.Description)
		out.name = s.Name
		if len(s.Metadata) > 0 {
			out.config = s.Metadata
		}
	}
	h.Config = indent(out.config)
	out.Header = h
	return out, nil
}

// syncState says whether prime-sync put the run on the platform, from its
// journal.
func syncState(dir string) (bool, string) {
	var j offlinesync.Journal
	err := readJSON(filepath.Join(dir, offlinesync.JournalFile), &j)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, "Not synced: prime-sync puts it on the platform."
	case err != nil:
		return false, "The sync journal cannot be read: " + err.Error()
	case j.RunID == "":
		return false, "Not synced yet: a sync began but created no platform run."
	}
	confirmed := 0
	for _, o := range j.Objects {
		if o.Confirmed {
			confirmed++
		}
	}
	state := "still open on the platform"
	if j.ClosedOut != "" {
		state = "closed out as " + j.ClosedOut
	}
	return true, fmt.Sprintf("Synced to platform run %s on %s: %d metrics posts, %d sample objects confirmed; %s (as of %s).",
		j.RunID, j.Endpoint, j.MetricsPosted, confirmed, state, stamp(j.UpdatedAt))
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func count(n int64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

func envName(id, version string) string {
	if version == "" {
		return id
	}
	return id + "@" + version
}

func appendField(fields [][2]string, label, value string) [][2]string {
	if value == "" {
		return fields
	}
	return append(fields, [2]string{label, value})
}

func indent(v map[string]any) string {
	if len(v) == 0 {
		return ""
	}
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	return string(raw)
}

// flatten turns a summary into label and value rows, nested maps as
// dotted keys (avg_metrics.<k>), in key order, as a comparison flattens a
// config (flattenConfig); text shows without its quotes.
func flatten(m map[string]any) [][2]string {
	flat := map[string]string{}
	flattenConfig("", m, flat)
	out := make([][2]string, 0, len(flat))
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		out = append(out, [2]string{k, plain(json.RawMessage(flat[k]))})
	}
	return out
}
