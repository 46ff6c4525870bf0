//go:build !amd64

package pjson

// plainPrefix is 0 where there is no vector scan: the callers' eight-bytes-
// at-a-time loop does all of it.
func plainPrefix(string) int { return 0 }

// specialPrefix is 0 where there is no vector scan.
func specialPrefix(string) int { return 0 }
