package trainerlib

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Statuses a run can report in prime.run.end. StatusNone is the commands'
// own: they send no end event, like a trainer that dies.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusCrashed   = "crashed"
	StatusNone      = "none"
)

// Command names a command in its usage text and in the error reason it
// makes up for a run that does not complete.
type Command struct {
	// Name is the program's name, e.g. "demotrainer".
	Name string
	// Plays says what it plays, e.g. "a short RL training run".
	Plays string
	// Noun is what a run is called in its flags' help, e.g. "evaluation".
	Noun string
}

// Common is what both commands read from the same flags.
type Common struct {
	Endpoint    Endpoint
	Seed        uint64
	Status      string
	ErrorReason string
	// ExportTimeout limits one export, retries included.
	ExportTimeout time.Duration
}

// FlagSet is a command's flag set with the common flags defined; the
// command defines its own on it before Parse.
type FlagSet struct {
	*flag.FlagSet
	cmd      Command
	common   *Common
	endpoint string
}

// NewFlagSet defines the common flags into c. getenv supplies the
// endpoint's fallback (OTEL_EXPORTER_OTLP_ENDPOINT), so tests do not depend
// on the process environment.
func (cmd Command) NewFlagSet(stderr io.Writer, getenv func(string) string, c *Common) *FlagSet {
	fs := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s [flags]\n\nPlays %s and sends it as OTLP/HTTP to a collector.\n\nflags:\n", cmd.Name, cmd.Plays)
		fs.PrintDefaults()
	}
	f := &FlagSet{FlagSet: fs, cmd: cmd, common: c}

	defaultEndpoint := "localhost:4318"
	if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		defaultEndpoint = v
	}
	fs.StringVar(&f.endpoint, "endpoint", defaultEndpoint, "OTLP/HTTP receiver: host:port (plain HTTP) or an http(s) URL; env OTEL_EXPORTER_OTLP_ENDPOINT")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of every generated value")
	fs.StringVar(&c.Status, "status", StatusCompleted, "how the "+cmd.Noun+" ends: completed, failed, cancelled, crashed, or none (send no prime.run.end)")
	fs.StringVar(&c.ErrorReason, "error", "", "prime.run.error for a status other than completed (default: a message naming the status)")
	fs.DurationVar(&c.ExportTimeout, "export-timeout", 10*time.Second, "time limit of one export, retries included")
	return f
}

// Parse parses args, refuses positional arguments and a bad -endpoint, and
// gives a status other than completed its default reason.
func (f *FlagSet) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return UsageError(fmt.Sprintf("unexpected arguments: %q", f.Args()))
	}
	ep, err := ParseEndpoint(f.endpoint)
	if err != nil {
		return UsageError("-endpoint: " + err.Error())
	}
	c := f.common
	c.Endpoint = ep
	if c.Status != StatusCompleted && c.Status != StatusNone && c.ErrorReason == "" {
		c.ErrorReason = f.cmd.Name + ": simulated " + c.Status + " " + f.cmd.Noun
	}
	return nil
}

// StatusError is the usage error of an unknown -status, or nil. The checks
// of the common flags are apart so that each command keeps its own order of
// errors.
func (c Common) StatusError() error {
	switch c.Status {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusCrashed, StatusNone:
		return nil
	}
	return UsageError(fmt.Sprintf("-status %q: want completed, failed, cancelled, crashed or none", c.Status))
}

// ExportTimeoutError is the usage error of a -export-timeout that is not
// positive, or nil.
func (c Common) ExportTimeoutError() error {
	if c.ExportTimeout <= 0 {
		return UsageError("-export-timeout must be positive")
	}
	return nil
}

// SplitList splits a comma-separated flag, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// Identity names the run the way the exporter will resolve it.
func Identity(runKey, runID string) string {
	if runID != "" {
		return "id " + runID
	}
	return "key " + runKey
}

// EndText says how the run was ended, for the summary line.
func EndText(status string) string {
	if status == StatusNone {
		return "no prime.run.end"
	}
	return "prime.run.end " + status
}

// AtLeastOne is the usage error of a count flag under 1, or nil.
func AtLeastOne(flag string, v int) error {
	if v < 1 {
		return UsageError(flag + " must be at least 1")
	}
	return nil
}

// NotNegative is the usage error of a size or pause flag under 0, or nil.
func NotNegative[N ~int | ~int64](flag string, v N) error {
	if v < 0 {
		return UsageError(flag + " must not be negative")
	}
	return nil
}
