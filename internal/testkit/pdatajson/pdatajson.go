// Package pdatajson builds pdata values from JSON text, for tests: the
// shape an OTel SDK's map body has, which pcommon.Map.FromRaw of a decoded
// Go map would not give (it loses the text's key order and turns every
// number into a double).
package pdatajson

import (
	"encoding/json"
	"errors"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Decode is the pdata value of JSON text s: maps keep the text's key order
// (a key given twice keeps the place of its first and the value of its
// last, as pcommon.Map.PutEmpty does), integers stay ints, null is an
// empty value. Text after the value is an error.
func Decode(s string) (pcommon.Value, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v := pcommon.NewValueEmpty()
	if err := fill(dec, v); err != nil {
		return v, err
	}
	if dec.More() {
		return v, errors.New("text after the value")
	}
	return v, nil
}

func fill(dec *json.Decoder, v pcommon.Value) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '{' {
			m := v.SetEmptyMap()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if err := fill(dec, m.PutEmpty(k.(string))); err != nil {
					return err
				}
			}
		} else {
			sl := v.SetEmptySlice()
			for dec.More() {
				if err := fill(dec, sl.AppendEmpty()); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // the closing delimiter
		return err
	case string:
		v.SetStr(tok)
	case json.Number:
		if n, err := tok.Int64(); err == nil {
			v.SetInt(n)
			return nil
		}
		f, err := tok.Float64()
		if err != nil {
			return err
		}
		v.SetDouble(f)
	case bool:
		v.SetBool(tok)
	}
	return nil
}
