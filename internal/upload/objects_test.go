package upload_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/upload"
)

func TestAnObjectKeepsItsRangeAndProgressUntilItsConfirmMarksItsEpisodesDelivered(t *testing.T) {
	tests := []struct {
		name  string
		fail  string
		again []string // the second Send's requests, after the first failed at fail
	}{
		{name: "an upload that goes through at once"},
		{name: "a failed presign is presigned again", fail: "presign", again: []string{"presign", "put", "confirm"}},
		{name: "a failed PUT is put again with its URL, not presigned again", fail: "put", again: []string{"put", "confirm"}},
		{name: "a failed confirm is only confirmed again", fail: "confirm", again: []string{"confirm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests []string
			sink := &platformtest.Sink{Note: func(r string) { requests = append(requests, r) }}
			if tt.fail != "" {
				sink.Fail = map[string][]error{tt.fail: {errors.New(tt.fail + " failed")}}
			}
			logger := zap.NewNop()
			store := runstore.NewMemStore()
			objects := upload.NewObjects(sink, store, logonce.New(logger, 0))
			reg := runs.New(fleettest.Config(), runs.Deps{API: &fleettest.CountingRuns{}, Store: store,
				Logger: logger, Warn: logonce.New(logger, 0), Tel: &fleettest.Tally{}})
			reg.Start()
			t.Cleanup(func() { require.NoError(t, reg.Shutdown(context.Background())) })
			ctx := context.Background()
			l, err := reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
			require.NoError(t, err)
			defer l.Release()
			const fp, step = 0xabc, 10
			episodes := []uint64{1, 2}

			first := objects.Take(ctx, l, fp, step)
			require.Equal(t, int64(0), first.Range, "a new object takes the step's first range")
			err = objects.Send(ctx, l, fp, first, []byte("parquet"), episodes)
			if tt.fail == "" {
				require.NoError(t, err)
				assert.Equal(t, []string{"presign", "put", "confirm"}, requests)
			} else {
				require.Error(t, err)
				undelivered, err := objects.Delivered(ctx, l, step, episodes)
				require.NoError(t, err)
				assert.Equal(t, []bool{false, false}, undelivered, "nothing is delivered before the confirm")
				requests = nil
				again := objects.Take(ctx, l, fp, step)
				assert.Equal(t, first.Range, again.Range, "the retry keeps its range")
				require.NoError(t, objects.Send(ctx, l, fp, again, []byte("parquet"), episodes))
				assert.Equal(t, tt.again, requests, "the retry resumes where the first attempt stopped")
			}
			delivered, err := objects.Delivered(ctx, l, step, episodes)
			require.NoError(t, err)
			assert.Equal(t, []bool{true, true}, delivered, "the confirm marks the episodes delivered")
			assert.Equal(t, int64(1), objects.Take(ctx, l, fp, step).Range, "a confirmed object is forgotten: the same object again is a new one")
		})
	}
}
