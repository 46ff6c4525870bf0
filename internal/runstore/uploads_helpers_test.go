package runstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/upload"
)

// startUpload begins object fp of step for l's run as the uploader does,
// and stops it after its PUT (its confirm fails): an upload pending in
// store, as the uploader saves an object once it is PUT. It returns the object's range.
func startUpload(t *testing.T, l runs.Lease, store upload.ObjectStore, fp uint64, step int64) int64 {
	t.Helper()
	ctx := context.Background()
	down := &platformtest.Sink{Fail: map[string][]error{"confirm": {errors.New("platform down")}}}
	o := upload.NewObjects(down, store, logonce.New(zap.NewNop(), 0))
	obj := o.Take(ctx, l, fp, step)
	require.Error(t, o.Send(ctx, l, fp, obj, []byte("body"), nil))
	return obj.Range
}

// rangeOf is the range object fp of step takes for l's run in a process
// that starts on store: a pending upload's, or a new one.
func rangeOf(l runs.Lease, store upload.ObjectStore, fp uint64, step int64) int64 {
	o := upload.NewObjects(&platformtest.Sink{}, store, logonce.New(zap.NewNop(), 0))
	return o.Take(context.Background(), l, fp, step).Range
}
