package sampletable

import (
	"encoding/binary"
	"math"
)

// colStats are a chunk's min and max, in the column's sort order (signed
// for ints, numeric for doubles with NaN left out, bytewise for strings).
type colStats struct {
	has        bool
	minI, maxI int64
	minF, maxF float64
	minS, maxS string
	long       bool // a string longer than maxStatBytes was seen
}

func (s *colStats) seeInt(v int64) {
	if !s.has {
		s.has, s.minI, s.maxI = true, v, v
		return
	}
	s.minI, s.maxI = min(s.minI, v), max(s.maxI, v)
}

func (s *colStats) seeFloat(v float64) {
	if math.IsNaN(v) {
		return
	}
	if !s.has {
		s.has, s.minF, s.maxF = true, v, v
		return
	}
	s.minF, s.maxF = math.Min(s.minF, v), math.Max(s.maxF, v)
}

func (s *colStats) seeString(v string) {
	if len(v) > maxStatBytes {
		s.long = true
		return
	}
	if !s.has {
		s.has, s.minS, s.maxS = true, v, v
		return
	}
	s.minS, s.maxS = min(s.minS, v), max(s.maxS, v)
}

// encoded returns min and max as PLAIN values, or false when the chunk
// has none to give.
func (s *colStats) encoded(kind colKind) (minV, maxV []byte, ok bool) {
	if !s.has || s.long {
		return nil, nil, false
	}
	switch kind {
	case kindString:
		return []byte(s.minS), []byte(s.maxS), true
	case kindFloat:
		// The format's rule for zeros: a min of +0 is written -0, a max of
		// -0 is written +0, so a reader's pruning never drops a zero.
		lo, hi := s.minF, s.maxF
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(lo)),
			binary.LittleEndian.AppendUint64(nil, math.Float64bits(hi)), true
	default:
		return binary.LittleEndian.AppendUint64(nil, uint64(s.minI)),
			binary.LittleEndian.AppendUint64(nil, uint64(s.maxI)), true
	}
}
