//go:build !amd64

package sampletable

// stage1 is the first stage of the len(out) 64-byte blocks that s begins
// with.
func stage1(s string, st *stage1State, out []blockMarks) { stage1Words(s, st, out) }
