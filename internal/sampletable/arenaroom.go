package sampletable

// The room an Arena gives the mapping of its records besides their text:
// what a record builds and drops once its rows are written (its body's
// members and index, a native document's projection), reused record after
// record, and the rows themselves, carved out of slabs. A 2 KB native
// document took thirteen allocations to map, most of them its graph's
// slices doubling and its row; each was a share of the garbage collector's
// work at 2 KB episodes.

// projection is the room a native document's projection builds in and
// drops once its rows are written: its traces, a trace's nodes and calls,
// a branch's path.
type projection struct {
	traces []trace
	nodes  []graphNode
	calls  []callUsage
	path   []int
}

// projection is a's room for projecting a document, one of its own for a
// nil Arena.
func (a *Arena) projection() *projection {
	if a == nil {
		return new(projection)
	}
	if a.proj == nil {
		a.proj = new(projection)
	}
	return a.proj
}

// slabSize is how many values a slab allocates at a time.
const slabSize = 64

// slab hands out values of T from chunks of slabSize: an allocation a
// chunk rather than one a value. The values live as long as the chunk,
// which the garbage collector keeps while any of them is reachable.
type slab[T any] struct{ free []T }

func (s *slab[T]) take() *T {
	if len(s.free) == 0 {
		s.free = make([]T, slabSize)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// rowSlabs are the slabs of a's rows and their optional cells.
type rowSlabs struct {
	records slab[recordRow]
	docRows slab[[1]Episode]
	cells   slab[rowCells]
}

// recordRow is room for a column-keyed record's row.
func (a *Arena) recordRow() *recordRow {
	if a == nil {
		return new(recordRow)
	}
	return a.slabs.records.take()
}

// docRow is room for a native document's one row.
func (a *Arena) docRow() *[1]Episode {
	if a == nil {
		return new([1]Episode)
	}
	return a.slabs.docRows.take()
}

// rowCells is room for a native row's optional cells.
func (a *Arena) rowCells() *rowCells {
	if a == nil {
		return new(rowCells)
	}
	return a.slabs.cells.take()
}
