package pjson

import (
	"slices"
	"unsafe"
)

// Buffer is what pjson writes into: a strings.Builder whose first bytes
// can be memory the caller provides (NewBuffer), so that the caller can
// carve many texts out of one allocation. Like a strings.Builder, it only
// ever appends, so a String it returned never changes; and it leaves out
// the builder's copy check, which the writer paid on every byte.
type Buffer struct{ b []byte }

// NewBuffer returns a Buffer that writes into p[:0] until it outgrows
// cap(p), and into memory of its own from then on.
func NewBuffer(p []byte) Buffer { return Buffer{b: p[:0]} }

// Grow makes room for n more bytes.
func (b *Buffer) Grow(n int) { b.b = slices.Grow(b.b, n) }

// Len is the number of bytes written.
func (b *Buffer) Len() int { return len(b.b) }

// Bytes is the bytes written, without a copy.
func (b *Buffer) Bytes() []byte { return b.b }

// String is the bytes written, without a copy.
func (b *Buffer) String() string { return unsafe.String(unsafe.SliceData(b.b), len(b.b)) }

func (b *Buffer) WriteByte(c byte) error {
	b.b = append(b.b, c)
	return nil
}

func (b *Buffer) WriteString(s string) (int, error) {
	b.b = append(b.b, s...)
	return len(s), nil
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.b = append(b.b, p...)
	return len(p), nil
}
