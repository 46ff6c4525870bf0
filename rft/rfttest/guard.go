package rfttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"unicode/utf8"
)

// decodeBody reads a platform request body: Content-Type application/json,
// valid UTF-8, exactly one strict JSON object, numbers kept as json.Number.
// Bare NaN or Infinity are not JSON and fail here with an opaque 400, as a
// strict server's parser would.
func decodeBody(h http.Header, body []byte) (map[string]any, error) {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, refuse(http.StatusUnsupportedMediaType, "Content-Type must be application/json")
	}
	if !utf8.Valid(body) {
		return nil, refuse(http.StatusBadRequest, "There was an error parsing the body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, refuse(http.StatusBadRequest, "There was an error parsing the body")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, refuse(http.StatusBadRequest, "There was an error parsing the body")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, refuse(http.StatusBadRequest, "the body must be a JSON object")
	}
	return obj, nil
}
