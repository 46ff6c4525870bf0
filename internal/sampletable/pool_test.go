package sampletable

import (
	"runtime"
	"testing"
	"unsafe"
)

func TestThePoolHandsOutZeroedAlignedBuffersAndTakesThemBack(t *testing.T) {
	p := newBufferPool()
	for _, size := range []int{0, 1, 63, 64, 65, 1000, 1 << 20} {
		b := p.Allocate(size)
		if len(b) != size {
			t.Fatalf("Allocate(%d) has length %d", size, len(b))
		}
		if size > 0 && uintptr(unsafe.Pointer(&b[0]))%alignment != 0 {
			t.Fatalf("Allocate(%d) is not %d-byte aligned", size, alignment)
		}
		for i := range b {
			b[i] = 0xff
		}
		p.Free(b)
		again := p.Allocate(size)
		for i, v := range again {
			if v != 0 {
				t.Fatalf("a reused buffer of %d bytes holds %#x at %d", size, v, i)
			}
		}
	}
}

func TestReallocateKeepsTheBytesAndZeroesTheGrowth(t *testing.T) {
	p := newBufferPool()
	b := p.Allocate(100)
	for i := range b {
		b[i] = byte(i)
	}
	b = p.Reallocate(50, b)  // shrink within the buffer
	b = p.Reallocate(120, b) // grow within the class
	for i := range 50 {
		if b[i] != byte(i) {
			t.Fatalf("byte %d lost: %d", i, b[i])
		}
	}
	for i := 50; i < 120; i++ {
		if b[i] != 0 {
			t.Fatalf("byte %d after a shrink and a grow is %d, want 0", i, b[i])
		}
	}
	b = p.Reallocate(5000, b) // into a bigger class
	if len(b) != 5000 || b[49] != 49 || b[4999] != 0 {
		t.Fatalf("grown buffer: len %d, b[49]=%d, b[4999]=%d", len(b), b[49], b[4999])
	}
}

func TestFreeLeavesForeignBuffersToTheGC(t *testing.T) {
	p := newBufferPool()
	p.Free(make([]byte, 100)) // capacity outside the classes
	if got := p.classes[class(100)].Get(); got != nil {
		t.Fatal("a buffer the pool did not make was pooled")
	}
}

func TestReusedBuffersAreNotAllocatedAgain(t *testing.T) {
	p := newBufferPool()
	const size, rounds = 1 << 16, 100
	p.Free(p.Allocate(size))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range rounds {
		p.Free(p.Allocate(size))
	}
	runtime.ReadMemStats(&after)
	// Without the pool every round would allocate size bytes. The race
	// detector makes sync.Pool drop a quarter of what it is given, so the
	// bound leaves room for that.
	if got := after.TotalAlloc - before.TotalAlloc; got > rounds*size/2 {
		t.Fatalf("%d rounds of a reused %d-byte buffer allocated %d bytes", rounds, size, got)
	}
}
