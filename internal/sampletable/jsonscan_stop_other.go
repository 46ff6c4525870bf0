//go:build !amd64

package sampletable

// stopPrefix is 0 where there is no vector scan.
func stopPrefix(string, byte, byte, byte, byte) int { return 0 }
