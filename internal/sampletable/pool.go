package sampletable

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is an Arrow allocator that keeps freed buffers for the next
// object. Building and writing an object makes buffers as big as its
// columns (the builders' data, the writer's pages); made fresh for every
// object, they were most of the bytes the exporter allocated, and the
// garbage collector's work with them. Buffers come in power-of-two size
// classes, each class a sync.Pool, so memory the collector no longer
// needs is still given back to the GC.
type bufferPool struct {
	classes [maxClass + 1]sync.Pool // class c holds *[]byte of capacity 1<<c (+ alignment)
}

const (
	minClass  = 6  // 64 B
	maxClass  = 30 // 1 GiB; larger buffers are not pooled
	alignment = 64 // Arrow's buffer alignment
)

var _ memory.Allocator = (*bufferPool)(nil)

func newBufferPool() *bufferPool { return &bufferPool{} }

// class is the smallest class holding size bytes.
func class(size int) int {
	if size <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(size - 1))
}

// Allocate returns size zeroed bytes, aligned as Arrow aligns them.
func (p *bufferPool) Allocate(size int) []byte {
	c := class(size)
	if c > maxClass {
		return alignedMake(size, size)
	}
	if v := p.classes[c].Get(); v != nil {
		b := (*v.(*[]byte))[:size]
		clear(b)
		return b
	}
	return alignedMake(size, 1<<c)
}

// Reallocate grows or shrinks b to size, keeping its bytes.
func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:]) // bytes a shrink left behind
		}
		return b
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps b for a later Allocate of its class. A buffer the pool did
// not make (a capacity outside the classes) is left to the GC.
func (p *bufferPool) Free(b []byte) {
	c := bits.Len(uint(cap(b))) - 1 // floor(log2(cap)): alignment slack never reaches the next class
	if c < minClass || c > maxClass || cap(b) < 1<<c || cap(b) > 1<<c+alignment {
		return
	}
	b = b[:cap(b)]
	p.classes[c].Put(&b)
}

// alignedMake returns size bytes with capacity at least capacity, starting
// at a 64-byte boundary.
func alignedMake(size, capacity int) []byte {
	buf := make([]byte, capacity+alignment)
	shift := int(uintptr(alignment)-uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%alignment) % alignment
	return buf[shift : shift+size : len(buf)]
}
