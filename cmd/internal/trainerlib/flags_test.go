package trainerlib

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

var testCommand = Command{Name: "demo", Plays: "a test run", Noun: "run"}

func noEnv(string) string { return "" }

// parse parses args with the common flags only.
func parse(args []string, getenv func(string) string) (Common, error) {
	var c Common
	err := testCommand.NewFlagSet(new(bytes.Buffer), getenv, &c).Parse(args)
	return c, err
}

func TestTheCommonFlagsHaveTheirDefaults(t *testing.T) {
	c, err := parse(nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := Common{Endpoint: Endpoint{HostPort: "localhost:4318", Insecure: true}, Seed: 1, Status: StatusCompleted, ExportTimeout: 10 * time.Second}
	if c != want {
		t.Fatalf("defaults %+v, want %+v", c, want)
	}
}

func TestTheEndpointFallsBackToTheOTLPEnvironmentVariable(t *testing.T) {
	getenv := func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return "http://from-env:4318"
		}
		return ""
	}
	c, err := parse(nil, getenv)
	if err != nil || c.Endpoint.HostPort != "from-env:4318" {
		t.Fatalf("endpoint = %+v, %v; want from-env:4318", c.Endpoint, err)
	}
	c, err = parse([]string{"-endpoint", "flag:1"}, getenv)
	if err != nil || c.Endpoint.HostPort != "flag:1" {
		t.Fatalf("endpoint = %+v, %v; want the flag to win", c.Endpoint, err)
	}
}

func TestAStatusOtherThanCompletedOrNoneGetsAReasonNamingTheCommand(t *testing.T) {
	for _, tc := range []struct{ status, reason, want string }{
		{"completed", "", ""},
		{"none", "", ""},
		{"failed", "", "demo: simulated failed run"},
		{"crashed", "segfault", "segfault"},
	} {
		t.Run(tc.status, func(t *testing.T) {
			c, err := parse([]string{"-status", tc.status, "-error", tc.reason}, noEnv)
			if err != nil || c.ErrorReason != tc.want {
				t.Fatalf("reason %q (%v), want %q", c.ErrorReason, err, tc.want)
			}
		})
	}
}

func TestBadCommonFlagsAreUsageErrorsNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		check func(Common) error
		want  string
	}{
		{"an argument", []string{"extra"}, nil, "unexpected arguments"},
		{"a bad endpoint", []string{"-endpoint", "ftp://x:1"}, nil, "-endpoint"},
		{"an unknown status", []string{"-status", "done"}, Common.StatusError, `-status "done"`},
		{"no export time", []string{"-export-timeout", "0s"}, Common.ExportTimeoutError, "-export-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(tc.args, noEnv)
			if tc.check != nil {
				if err != nil {
					t.Fatal(err)
				}
				err = tc.check(c)
			}
			var usage UsageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a usage error naming %q", err, tc.want)
			}
		})
	}
	c, _ := parse(nil, noEnv)
	if c.StatusError() != nil || c.ExportTimeoutError() != nil {
		t.Fatal("the defaults are refused")
	}
}

func TestHelpPrintsTheUsageAndEveryFlag(t *testing.T) {
	var stderr bytes.Buffer
	var c Common
	fs := testCommand.NewFlagSet(&stderr, noEnv, &c)
	fs.Int("own", 0, "a command's own flag")
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: err = %v, want flag.ErrHelp", err)
	}
	out := stderr.String()
	if !strings.HasPrefix(out, "usage: demo [flags]\n\nPlays a test run and sends it as OTLP/HTTP to a collector.\n\nflags:\n") {
		t.Errorf("usage %q", out)
	}
	for _, name := range []string{"-endpoint", "-seed", "-status", "-error", "-export-timeout", "-own", "how the run ends"} {
		if !strings.Contains(out, name) {
			t.Errorf("usage lacks %s:\n%s", name, out)
		}
	}
}

func TestListsAreCommaSeparatedAndTrimmed(t *testing.T) {
	if got := SplitList(" gsm8k, owner/env@v2 ,,"); !slices.Equal(got, []string{"gsm8k", "owner/env@v2"}) {
		t.Fatalf("SplitList = %q", got)
	}
	if got := SplitList(" , "); got != nil {
		t.Fatalf("SplitList of blanks = %q, want none", got)
	}
}

func TestTheSummaryNamesTheRunByIDOrKeyAndHowItEnded(t *testing.T) {
	if got := Identity("k", ""); got != "key k" {
		t.Errorf("Identity = %q", got)
	}
	if got := Identity("", "r-1"); got != "id r-1" {
		t.Errorf("Identity = %q", got)
	}
	if got := EndText(StatusNone); got != "no prime.run.end" {
		t.Errorf("EndText(none) = %q", got)
	}
	if got := EndText(StatusFailed); got != "prime.run.end failed" {
		t.Errorf("EndText(failed) = %q", got)
	}
}

func TestCountsAndSizesAreCheckedByTheirFlagsName(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // "" for nil
	}{
		{AtLeastOne("-steps", 1), ""},
		{AtLeastOne("-steps", 0), "-steps must be at least 1"},
		{NotNegative("-episodes", 0), ""},
		{NotNegative("-episodes", -1), "-episodes must not be negative"},
		{NotNegative("-step-delay", -time.Millisecond), "-step-delay must not be negative"},
	} {
		var usage UsageError
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("err %v, want none", tc.err)
		case tc.want != "" && (!errors.As(tc.err, &usage) || tc.err.Error() != tc.want):
			t.Errorf("err %v, want the usage error %q", tc.err, tc.want)
		}
	}
}
