package upload

import (
	"runtime"
	"testing"
)

func TestSparesKeepReturnedValuesThroughGarbageCollections(t *testing.T) {
	made := 0
	s := newSpares(2, func() *[]byte { made++; b := make([]byte, 0, 1<<20); return &b }, func(b *[]byte) bool { return cap(*b) <= 1<<20 })
	a, b := s.get(), s.get()
	s.put(a)
	s.put(b)
	runtime.GC()
	runtime.GC() // a sync.Pool is empty after two
	if got1, got2 := s.get(), s.get(); (got1 != a && got1 != b) || (got2 != a && got2 != b) || got1 == got2 {
		t.Fatalf("got %p and %p back, want the two put (%p, %p)", got1, got2, a, b)
	}
	if made != 2 {
		t.Fatalf("made %d values, want 2: the kept ones were not reused", made)
	}
}

func TestSparesDropWhatIsNotWorthKeepingAndWhatHasNoRoom(t *testing.T) {
	for _, c := range []struct {
		name       string
		put        []int // capacities returned, in order
		wantReused int   // of the next len(put) gets
	}{
		{"more returned than there is room for", []int{10, 10, 10}, 2},
		{"a value grown past what is kept", []int{1 << 30}, 0},
		{"one of each", []int{1 << 30, 10}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			made := 0
			s := newSpares(2, func() *[]byte { made++; b := []byte{}; return &b }, func(b *[]byte) bool { return cap(*b) <= 1<<20 })
			for _, n := range c.put {
				b := make([]byte, 0, n)
				s.put(&b)
			}
			for range c.put {
				s.get()
			}
			if reused := len(c.put) - made; reused != c.wantReused {
				t.Fatalf("%d of %d gets reused a returned value, want %d", reused, len(c.put), c.wantReused)
			}
		})
	}
}

func TestBudgetSparesKeepValuesUpToTheirBytesTogether(t *testing.T) {
	made := 0
	size := func(b *[]byte) int { return cap(*b) }
	s := newBudgetSpares(8, func() *[]byte { made++; b := []byte{}; return &b }, func(b *[]byte) bool { return cap(*b) <= 1<<20 }, size, 100)
	for _, n := range []int{40, 40, 40, 10} { // the third would pass 100 bytes; the fourth fits
		b := make([]byte, 0, n)
		s.put(&b)
	}
	var got []int
	for range 4 {
		got = append(got, cap(*s.get()))
	}
	if made != 1 || got[0]+got[1]+got[2] != 90 {
		t.Fatalf("got capacities %v and made %d fresh, want 40, 40 and 10 reused and one made", got, made)
	}
	// What was taken out is off the budget: the same bytes fit again.
	for range 2 {
		b := make([]byte, 0, 50)
		s.put(&b)
	}
	if a, b := cap(*s.get()), cap(*s.get()); a != 50 || b != 50 {
		t.Fatalf("after the gets, got %d and %d back, want both 50s kept", a, b)
	}
}
