package sampletable

import (
	"fmt"
	"testing"
)

// sharingRows are rows whose text column (0) lies inside their free column
// (4) when free is big, or the other way round: the completion inside the
// trajectory, before or after it in the schema. Some rows share nothing,
// one stretch is too short to derive, and nulls sit between.
func sharingRows(textInsideFree bool) table {
	t := rows(12, 100)
	for i := range t {
		traj, lo, hi := trajectoryLike(uint64(i), 40_000+i*9_000)
		inner := traj[lo:hi]
		switch i % 4 {
		case 1:
			inner = traj[lo : lo+deriveMin-1] // too short: compressed, not derived
		case 2:
			continue // nothing shared
		case 3:
			if i == 3 {
				t[i][0], t[i][4] = nil, nil
				continue
			}
		}
		if textInsideFree {
			t[i][0], t[i][4] = inner, traj
		} else {
			t[i][0], t[i][4] = traj, inner
		}
	}
	return t
}

// A cell lying inside a big cell of another column of its row is found,
// whichever column comes first, and its file reads back in both readers
// as the table's cells.
func TestCellsInsideABigCellOfTheirRowReadBackInBothReaders(t *testing.T) {
	for _, textInsideFree := range []bool{true, false} {
		t.Run(fmt.Sprint("text inside free: ", textInsideFree), func(t *testing.T) {
			want := sharingRows(textInsideFree)
			w, err := newParquetWriter(testSchema(), "free")
			if err != nil {
				t.Fatal(err)
			}
			w.findShared(want)
			derived, whole := 0, 0
			for k, sc := range w.shared {
				if sc.derived {
					derived++
					if k.row%4 == 1 || k.row%4 == 2 {
						t.Errorf("row %d: a cell %d bytes long is derived", k.row, len(want[k.row][k.col].(string)))
					}
				} else {
					whole++
				}
			}
			if derived != 5 || whole != 5 { // rows 0, 4, 7, 8 and 11
				t.Fatalf("found %d derived cells and %d big cells they lie in, want 5 and 5", derived, whole)
			}
			w.releaseShared()

			b := write(t, want, "free")
			readsBackInBoth(t, b, want)
		})
	}
}

// Cells equal to another cell's text but not sharing its memory are not
// taken for derived ones: only the table's own sharing counts.
func TestEqualTextInSeparateMemoryIsNotShared(t *testing.T) {
	tbl := rows(2, 100)
	traj, lo, hi := trajectoryLike(7, 80_000)
	tbl[0][4] = traj
	tbl[0][0] = string([]byte(traj[lo:hi]))
	w, err := newParquetWriter(testSchema(), "free")
	if err != nil {
		t.Fatal(err)
	}
	w.findShared(tbl)
	if len(w.shared) != 0 {
		t.Fatalf("shared cells %v, want none", w.shared)
	}
}
