package main

import "fmt"

// usageError is a bad command line: the program prints it and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exportError is telemetry that did not reach the collector: the program exits
// 1 with it, because a demo or test must not pass on data that was not sent.
type exportError struct {
	// during names the operation that failed, e.g. "flush after episode 50".
	during string
	err    error
}

func (e *exportError) Error() string {
	return fmt.Sprintf("export failed (%s): %v", e.during, e.err)
}

func (e *exportError) Unwrap() error { return e.err }
