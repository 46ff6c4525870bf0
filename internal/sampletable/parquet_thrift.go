package sampletable

import "encoding/binary"

// Thrift compact protocol type ids (the Parquet footer and page headers are
// Thrift compact structs).
const (
	tBoolTrue  = 1
	tBoolFalse = 2
	tByte      = 3
	tI32       = 5
	tI64       = 6
	tBinary    = 8
	tList      = 9
	tStruct    = 12
)

// thriftWriter appends Thrift compact-protocol structs to buf. It writes
// only what the sample table's footer and page headers use: i32, i64,
// binary, bool, lists and nested structs. Field ids are given in
// increasing order within a struct, as the protocol's short field headers
// require.
type thriftWriter struct {
	buf  []byte
	last []int16 // the previous field id of each open struct
}

func (t *thriftWriter) reset() {
	t.buf = t.buf[:0]
	t.last = t.last[:0]
}

func (t *thriftWriter) uvarint(v uint64) { t.buf = binary.AppendUvarint(t.buf, v) }

// varint is zigzag then varint, Thrift compact's encoding of i16/i32/i64.
func (t *thriftWriter) varint(v int64) { t.uvarint(uint64((v << 1) ^ (v >> 63))) }

func (t *thriftWriter) field(id int16, typ byte) {
	prev := int16(0)
	if n := len(t.last); n > 0 {
		prev = t.last[n-1]
		t.last[n-1] = id
	}
	if d := id - prev; d > 0 && d <= 15 {
		t.buf = append(t.buf, byte(d)<<4|typ)
		return
	}
	t.buf = append(t.buf, typ)
	t.varint(int64(id))
}

func (t *thriftWriter) i8(id int16, v int8)   { t.field(id, tByte); t.buf = append(t.buf, byte(v)) }
func (t *thriftWriter) i32(id int16, v int32) { t.field(id, tI32); t.varint(int64(v)) }
func (t *thriftWriter) i64(id int16, v int64) { t.field(id, tI64); t.varint(v) }

func (t *thriftWriter) binary(id int16, b []byte) {
	t.field(id, tBinary)
	t.uvarint(uint64(len(b)))
	t.buf = append(t.buf, b...)
}

func (t *thriftWriter) str(id int16, s string) {
	t.field(id, tBinary)
	t.uvarint(uint64(len(s)))
	t.buf = append(t.buf, s...)
}

func (t *thriftWriter) boolean(id int16, v bool) {
	if v {
		t.field(id, tBoolTrue)
	} else {
		t.field(id, tBoolFalse)
	}
}

// beginStruct opens a struct: as field id of the enclosing struct, or as a
// list element when id is 0.
func (t *thriftWriter) beginStruct(id int16) {
	if id != 0 {
		t.field(id, tStruct)
	}
	t.last = append(t.last, 0)
}

func (t *thriftWriter) endStruct() {
	t.buf = append(t.buf, 0) // STOP
	t.last = t.last[:len(t.last)-1]
}

// list opens a list field of n elements of type elem; the caller then
// writes the elements (structs with beginStruct(0), others with the
// element writers below).
func (t *thriftWriter) list(id int16, elem byte, n int) {
	t.field(id, tList)
	if n < 15 {
		t.buf = append(t.buf, byte(n)<<4|elem)
		return
	}
	t.buf = append(t.buf, 0xf0|elem)
	t.uvarint(uint64(n))
}

func (t *thriftWriter) elemI32(v int32) { t.varint(int64(v)) }

func (t *thriftWriter) elemStr(s string) {
	t.uvarint(uint64(len(s)))
	t.buf = append(t.buf, s...)
}
