package offlinesync

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnfinishedNamesTheRunsLeftByOutcome(t *testing.T) {
	down := errors.New("platform down")
	tests := []struct {
		name    string
		reports []Report
		want    string
	}{
		{"every run synced", []Report{{Dir: "a"}, {Dir: "b"}}, ""},
		{
			"one left", []Report{{Dir: "a"}, {Dir: "b", Outcome: Left, Err: down}, {Dir: "c"}},
			"1 of 3 run(s) not finished, run prime-sync again: b\n",
		},
		{
			"left and misconfigured",
			[]Report{{Dir: "a", Outcome: Misconfigured, Err: down}, {Dir: "b", Outcome: Left, Err: down}, {Dir: "c", Outcome: Left, Err: down}},
			"2 of 3 run(s) not finished, run prime-sync again: b, c\n" +
				"1 of 3 run(s) need a fix first (see their lines): a\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Unfinished(tt.reports))
		})
	}
}
