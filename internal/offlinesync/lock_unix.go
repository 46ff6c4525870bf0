//go:build unix

package offlinesync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is held, with flock, by the sync working on a run directory.
const LockFile = "sync.lock"

// ErrBusy says another sync holds the run directory.
var ErrBusy = errors.New("another prime-sync is syncing this run directory")

// lock takes dir's sync lock without waiting. The lock goes with the
// process, so a killed sync never leaves a run locked.
func lock(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, fmt.Errorf("lock file: %w", err)
	}
	return func() { _ = f.Close() }, nil
}
