package trainerlib

import (
	"errors"
	"fmt"
)

// UsageError is a bad command line: the program prints it and exits 2.
type UsageError string

func (e UsageError) Error() string { return string(e) }

// ExportError is telemetry that did not reach the collector: the program
// exits 1 with it, because a demo or test must not pass on data that was not
// sent.
type ExportError struct {
	// During names the operation that failed, e.g. "flush after step 3".
	During string
	Err    error
}

func (e *ExportError) Error() string {
	return fmt.Sprintf("export failed (%s): %v", e.During, e.Err)
}

func (e *ExportError) Unwrap() error { return e.Err }

// FirstFailure picks the error to report. A failed export fails the run on
// its own: the shutdown after it fails the same way and would only repeat it.
func FirstFailure(runErr, shutdownErr, reportedErr error) error {
	var exportErr *ExportError
	if errors.As(runErr, &exportErr) {
		return runErr
	}
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	if shutdownErr != nil {
		errs = append(errs, &ExportError{During: "shutdown", Err: shutdownErr})
	}
	if reportedErr != nil {
		errs = append(errs, &ExportError{During: "reported by the OTel SDK", Err: reportedErr})
	}
	return errors.Join(errs...)
}
