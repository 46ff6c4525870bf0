package sampletable

import (
	"reflect"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestRowsMappedIntoAnArenaAreTheRowsMappedWithoutAndEndWithItsRelease(t *testing.T) {
	for _, s := range benchShapes() {
		for _, asJSON := range []bool{false, true} {
			t.Run(s.name+map[bool]string{false: "/map-body", true: "/json-body"}[asJSON], func(t *testing.T) {
				bodies, attrs, _ := benchRecords(s, asJSON)
				want := mapAll(t, nil, bodies, attrs, nil)
				a := zeroingPool(4).Arena()
				got := mapAll(t, a, bodies, attrs, nil)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("rows mapped into an arena differ from the rows mapped without")
				}
				a.Release()
				for i, ep := range got {
					texts := map[string]string{"trajectory": ep.Trajectory}
					if !asJSON { // a JSON body's columns are spans of its text
						for col, v := range map[string]*string{"completion": ep.Completion, "task": ep.Task, "info": ep.Info, "metrics": ep.Metrics, "timing": ep.Timing} {
							texts[col] = *v
						}
					}
					for col, text := range texts {
						if strings.Trim(text, "\x00") != "" {
							t.Fatalf("row %d's %s still reads %.40q after Release; want the zeroes that show a text kept too long", i, col, text)
						}
					}
				}
				if !reflect.DeepEqual(mapAll(t, nil, bodies, attrs, nil), want) {
					t.Fatalf("the records changed")
				}
			})
		}
	}
}

func TestATextLargerThanAChunkGetsMemoryOfItsOwn(t *testing.T) {
	content := strings.Repeat("x", arenaChunk+arenaChunk/2)
	body := jsonValue(t, `{"trajectory":[{"messages":[{"role":"user","content":"`+content+`"}]}]}`)
	a := NewArenaPool(1).Arena()
	rec, err := FromRecordIn(a, trainAttrs(t, 1), body, 1, 0, testNow())
	if err != nil {
		t.Fatal(err)
	}
	if inChunks(a, rec.Rows[0].Trajectory) {
		t.Fatalf("a text of %d bytes was written into a chunk of %d", len(rec.Rows[0].Trajectory), arenaChunk)
	}
	a.Release()
	if !strings.Contains(rec.Rows[0].Trajectory, content) {
		t.Fatalf("a text of its own memory was changed by Release")
	}
}

func TestAnArenaTextThatOutgrowsItsRoomLeavesTheNextTextAlone(t *testing.T) {
	a := NewArenaPool(1).Arena()
	first, second := a.take(4), a.take(4)
	second = append(second, "next"...)
	first = append(first, "longer than four"...)
	if string(second) != "next" || string(first) != "longer than four" {
		t.Fatalf("first %q, second %q; want each its own text", first, second)
	}
}

// zeroingPool is a pool whose arenas zero their texts on Release, as every
// pool of a -race build does, whatever this test binary's build.
func zeroingPool(chunks int) *ArenaPool {
	p := NewArenaPool(chunks)
	p.zero = true
	return p
}

func TestReleasedChunksServeTheNextArenaZeroed(t *testing.T) {
	pool := zeroingPool(1)
	a := pool.Arena()
	b := append(a.take(8), "episode!"...)
	a.Release()
	c := pool.Arena().take(8)
	if unsafe.SliceData(b) != unsafe.SliceData(c) {
		t.Fatalf("the next arena got a new chunk; want the released one")
	}
	if got := c[:8]; string(got) != strings.Repeat("\x00", 8) {
		t.Fatalf("the reused chunk holds %q, want zeroes", got)
	}
}

func TestArenasOfOnePoolMapSideBySide(t *testing.T) {
	bodies, attrs, _ := benchRecords(benchShapes()[0], false)
	want := mapAll(t, nil, bodies, attrs, nil)
	pool := NewArenaPool(2) // fewer than the arenas: some chunks overflow
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				a := pool.Arena()
				if got := mapAll(t, a, bodies, attrs, nil); !reflect.DeepEqual(got, want) {
					errs <- "rows mapped beside other arenas differ"
				}
				a.Release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestTextsOfMoreThanAQuarterChunkGetMemoryOfTheirOwn(t *testing.T) {
	// 600 KB trajectories: the first is written into a chunk, as its size
	// is not known before; the ones after it get memory of their own.
	var bodies []pcommon.Value
	for i := range 5 {
		content := strings.Repeat(string(rune('a'+i)), 600<<10)
		bodies = append(bodies, jsonValue(t, `{"trajectory":[{"messages":[{"role":"user","content":"`+content+`"}]}]}`))
	}
	attrs := trainAttrs(t, 1)
	want := mapAll(t, nil, bodies, attrs, nil)
	a := NewArenaPool(8).Arena()
	got := mapAll(t, a, bodies, attrs, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows mapped into an arena differ from the rows mapped without")
	}
	if n := len(a.chunks); n != 1 {
		t.Fatalf("the arena took %d chunks for %d texts of 600 KB, want the first text's one", n, len(bodies))
	}
	for i, ep := range got[1:] {
		if inChunks(a, ep.Trajectory) {
			t.Errorf("text %d is in a chunk", i+1)
		}
	}
	a.Release()
	for i, ep := range got[1:] {
		if !strings.Contains(ep.Trajectory, strings.Repeat(string(rune('a'+i+1)), 100)) {
			t.Errorf("text %d was changed by Release", i+1)
		}
	}
}

// inChunks tells whether text lies in a chunk of a.
func inChunks(a *Arena, text string) bool {
	p := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	for _, c := range a.chunks {
		if start := uintptr(unsafe.Pointer(unsafe.SliceData(c))); p >= start && p+uintptr(len(text)) <= start+uintptr(len(c)) {
			return true
		}
	}
	return false
}
