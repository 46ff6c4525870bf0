// Package fuzzbytes is the small byte language the fuzz targets read pdata
// from, shared by every package that has one.
package fuzzbytes

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
// Encoder writes the same language, so the seeds read as code.

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

// Reader consumes fuzz bytes; past the end it reads zeros.
type Reader struct{ B []byte }

func (r *Reader) Byte() byte {
	if len(r.B) == 0 {
		return 0
	}
	c := r.B[0]
	r.B = r.B[1:]
	return c
}

func (r *Reader) Str() string {
	n := min(int(r.Byte()), len(r.B))
	s := string(r.B[:n])
	r.B = r.B[n:]
	return s
}

func (r *Reader) U64() uint64 {
	var w [8]byte
	n := copy(w[:], r.B)
	r.B = r.B[n:]
	return binary.LittleEndian.Uint64(w[:])
}

func (r *Reader) Key(keys []string) string {
	if i := int(r.Byte()) % (len(keys) + 1); i < len(keys) {
		return keys[i]
	}
	return r.Str()
}

// Attrs reads a count byte and that many key/value pairs into m.
func (r *Reader) Attrs(m pcommon.Map, keys []string, depth int) {
	for n := int(r.Byte() % 12); n > 0 && len(r.B) > 0; n-- {
		k := r.Key(keys)
		r.Value(m.PutEmpty(k), keys, depth)
	}
}

func (r *Reader) Value(v pcommon.Value, keys []string, depth int) {
	t := int(r.Byte() % fzTypes)
	if depth >= fzMaxDepth && (t == fzSlice || t == fzMap) {
		t = fzStr
	}
	switch t {
	case fzEmpty:
	case fzStr:
		v.SetStr(r.Str())
	case fzInt:
		v.SetInt(int64(r.U64()))
	case fzSmallInt:
		v.SetInt(int64(int8(r.Byte())))
	case fzDouble:
		v.SetDouble(math.Float64frombits(r.U64()))
	case fzBool:
		v.SetBool(r.Byte()&1 == 1)
	case fzBytes:
		v.SetEmptyBytes().FromRaw([]byte(r.Str()))
	case fzSlice:
		s := v.SetEmptySlice()
		for n := int(r.Byte() % 6); n > 0 && len(r.B) > 0; n-- {
			r.Value(s.AppendEmpty(), keys, depth+1)
		}
	case fzMap:
		r.Attrs(v.SetEmptyMap(), keys, depth+1)
	case fzQuarter:
		v.SetDouble(float64(int8(r.Byte())) / 4)
	}
}

// MapOf is an ordered map for the encoder, so seeds are deterministic.
type MapOf []KV

// KV is a key (a string) and its value; an array rather than a struct so
// that seeds can be written as {key, value} in any package.
type KV [2]any

// Encoder writes the byte language Reader reads.
type Encoder struct{ B []byte }

func (e *Encoder) Byte(c byte) *Encoder { e.B = append(e.B, c); return e }

func (e *Encoder) Str(s string) *Encoder {
	if len(s) > 255 {
		panic(fmt.Sprintf("fuzz seed string of %d bytes is too long", len(s)))
	}
	e.B = append(append(e.B, byte(len(s))), s...)
	return e
}

func (e *Encoder) Key(keys []string, k string) {
	if i := slices.Index(keys, k); i >= 0 {
		e.Byte(byte(i))
		return
	}
	e.Byte(byte(len(keys))).Str(k)
}

func (e *Encoder) Attrs(keys []string, m MapOf) *Encoder {
	if len(m) >= 12 {
		panic("a fuzz seed map holds at most 11 pairs")
	}
	e.Byte(byte(len(m)))
	for _, kv := range m {
		e.Key(keys, kv[0].(string))
		e.Value(keys, kv[1])
	}
	return e
}

func (e *Encoder) Value(keys []string, v any) {
	switch v := v.(type) {
	case nil:
		e.Byte(fzEmpty)
	case string:
		e.Byte(fzStr).Str(v)
	case int:
		if v == int(int8(v)) {
			e.Byte(fzSmallInt).Byte(byte(int8(v)))
			return
		}
		e.Byte(fzInt)
		e.B = binary.LittleEndian.AppendUint64(e.B, uint64(v))
	case float64:
		if q := v * 4; q == math.Trunc(q) && q >= -128 && q <= 127 {
			e.Byte(fzQuarter).Byte(byte(int8(q)))
			return
		}
		e.Byte(fzDouble)
		e.B = binary.LittleEndian.AppendUint64(e.B, math.Float64bits(v))
	case bool:
		b := byte(0)
		if v {
			b = 1
		}
		e.Byte(fzBool).Byte(b)
	case []byte:
		e.Byte(fzBytes).Str(string(v))
	case []any:
		if len(v) >= 6 {
			panic("a fuzz seed list holds at most 5 values")
		}
		e.Byte(fzSlice).Byte(byte(len(v)))
		for _, item := range v {
			e.Value(keys, item)
		}
	case MapOf:
		e.Byte(fzMap).Attrs(keys, v)
	default:
		panic(fmt.Sprintf("fuzz seed value of type %T", v))
	}
}
