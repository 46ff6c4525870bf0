//go:build !race

package sampletable

// raceBuild tells whether this is a -race build: the test command's, where
// released arena chunks are zeroed (ArenaPool.zero).
const raceBuild = false
