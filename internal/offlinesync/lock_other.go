//go:build !unix

package offlinesync

import "errors"

// LockFile is held, with flock, by the sync working on a run directory.
const LockFile = "sync.lock"

// ErrBusy says another sync holds the run directory.
var ErrBusy = errors.New("another prime-sync is syncing this run directory")

// lock refuses: without flock two syncs could both send.
func lock(string) (func(), error) {
	return nil, errors.New("prime-sync needs flock, which this operating system does not have")
}
