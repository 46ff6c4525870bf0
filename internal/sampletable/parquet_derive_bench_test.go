package sampletable

import (
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/s2"
)

// BenchmarkDeriveCompletion is deriving the last branch's messages of a
// 200 KB episode's trajectory from the trajectory's elements, against
// compressing them afresh (the work it replaces).
func BenchmarkDeriveCompletion(b *testing.B) {
	traj, lo, hi := trajectoryLike(1, 90_000)
	block := s2.EncodeSnappy(nil, []byte(traj))
	_, hn := binary.Uvarint(block)
	elems := block[hn:]
	b.Run("derive", func(b *testing.B) {
		b.SetBytes(int64(hi - lo))
		sizes := newElemSizes()
		var cps []checkpoint
		var dst []byte
		for b.Loop() {
			cps, _ = sizes.scan(cps[:0], elems, len(traj))
			dst, _ = sizes.appendDerived(dst[:0], traj, elems, cps, lo, hi, (hi-lo)/literalShare)
		}
	})
	b.Run("afresh", func(b *testing.B) {
		b.SetBytes(int64(hi - lo))
		dst := make([]byte, s2.MaxEncodedLen(hi-lo))
		for b.Loop() {
			s2.EncodeSnappy(dst, []byte(traj[lo:hi]))
		}
	})
}
