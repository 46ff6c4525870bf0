//go:build !amd64

package sampletable

// numberBlocks is the number classes of the len(out) 64-byte blocks s
// begins with.
func numberBlocks(s string, out []numberClasses) {
	for i := range out {
		classifyNumberWords(s[i*64:], &out[i])
	}
}
