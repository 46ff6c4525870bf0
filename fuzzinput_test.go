package primeexporter

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The fuzz targets read pdata from a small byte language rather than from
// OTLP protobuf: a key is one byte choosing a name the exporter reads (or,
// past the list, a length-prefixed string), so the mutator reaches the
// interesting attributes in one step instead of having to spell them.
// fuzzEncoder writes the same language, so the seeds read as code.

// Value types of the byte language, chosen by one byte modulo fzTypes.
const (
	fzEmpty = iota
	fzStr
	fzInt      // 8 bytes, little-endian
	fzSmallInt // 1 byte, signed
	fzDouble   // 8 bytes of IEEE 754 bits: NaN, ±Inf, subnormals
	fzBool
	fzBytes
	fzSlice // count byte, then that many values
	fzMap   // count byte, then that many key/value pairs
	fzQuarter
	fzTypes
)

// fzMaxDepth bounds nesting so one input cannot build an unbounded tree.
const fzMaxDepth = 4

// fuzzReader consumes fuzz bytes; past the end it reads zeros.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *fuzzReader) str() string {
	n := min(int(r.byte()), len(r.b))
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *fuzzReader) u64() uint64 {
	var w [8]byte
	n := copy(w[:], r.b)
	r.b = r.b[n:]
	return binary.LittleEndian.Uint64(w[:])
}

func (r *fuzzReader) key(keys []string) string {
	if i := int(r.byte()) % (len(keys) + 1); i < len(keys) {
		return keys[i]
	}
	return r.str()
}

// attrs reads a count byte and that many key/value pairs into m.
func (r *fuzzReader) attrs(m pcommon.Map, keys []string, depth int) {
	for n := int(r.byte() % 12); n > 0 && len(r.b) > 0; n-- {
		k := r.key(keys)
		r.value(m.PutEmpty(k), keys, depth)
	}
}

func (r *fuzzReader) value(v pcommon.Value, keys []string, depth int) {
	t := int(r.byte() % fzTypes)
	if depth >= fzMaxDepth && (t == fzSlice || t == fzMap) {
		t = fzStr
	}
	switch t {
	case fzEmpty:
	case fzStr:
		v.SetStr(r.str())
	case fzInt:
		v.SetInt(int64(r.u64()))
	case fzSmallInt:
		v.SetInt(int64(int8(r.byte())))
	case fzDouble:
		v.SetDouble(math.Float64frombits(r.u64()))
	case fzBool:
		v.SetBool(r.byte()&1 == 1)
	case fzBytes:
		v.SetEmptyBytes().FromRaw([]byte(r.str()))
	case fzSlice:
		s := v.SetEmptySlice()
		for n := int(r.byte() % 6); n > 0 && len(r.b) > 0; n-- {
			r.value(s.AppendEmpty(), keys, depth+1)
		}
	case fzMap:
		r.attrs(v.SetEmptyMap(), keys, depth+1)
	case fzQuarter:
		v.SetDouble(float64(int8(r.byte())) / 4)
	}
}

// fzMapOf is an ordered map for the encoder, so seeds are deterministic.
type fzMapOf []fzKV

type fzKV struct {
	k string
	v any
}

// fuzzEncoder writes the byte language fuzzReader reads.
type fuzzEncoder struct{ b []byte }

func (e *fuzzEncoder) byte(c byte) *fuzzEncoder { e.b = append(e.b, c); return e }

func (e *fuzzEncoder) str(s string) *fuzzEncoder {
	if len(s) > 255 {
		panic(fmt.Sprintf("fuzz seed string of %d bytes is too long", len(s)))
	}
	e.b = append(append(e.b, byte(len(s))), s...)
	return e
}

func (e *fuzzEncoder) key(keys []string, k string) {
	if i := slices.Index(keys, k); i >= 0 {
		e.byte(byte(i))
		return
	}
	e.byte(byte(len(keys))).str(k)
}

func (e *fuzzEncoder) attrs(keys []string, m fzMapOf) *fuzzEncoder {
	if len(m) >= 12 {
		panic("a fuzz seed map holds at most 11 pairs")
	}
	e.byte(byte(len(m)))
	for _, kv := range m {
		e.key(keys, kv.k)
		e.value(keys, kv.v)
	}
	return e
}

func (e *fuzzEncoder) value(keys []string, v any) {
	switch v := v.(type) {
	case nil:
		e.byte(fzEmpty)
	case string:
		e.byte(fzStr).str(v)
	case int:
		if v == int(int8(v)) {
			e.byte(fzSmallInt).byte(byte(int8(v)))
			return
		}
		e.byte(fzInt)
		e.b = binary.LittleEndian.AppendUint64(e.b, uint64(v))
	case float64:
		if q := v * 4; q == math.Trunc(q) && q >= -128 && q <= 127 {
			e.byte(fzQuarter).byte(byte(int8(q)))
			return
		}
		e.byte(fzDouble)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
	case bool:
		b := byte(0)
		if v {
			b = 1
		}
		e.byte(fzBool).byte(b)
	case []byte:
		e.byte(fzBytes).str(string(v))
	case []any:
		if len(v) >= 6 {
			panic("a fuzz seed list holds at most 5 values")
		}
		e.byte(fzSlice).byte(byte(len(v)))
		for _, item := range v {
			e.value(keys, item)
		}
	case fzMapOf:
		e.byte(fzMap).attrs(keys, v)
	default:
		panic(fmt.Sprintf("fuzz seed value of type %T", v))
	}
}
