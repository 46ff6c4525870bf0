package tenant

import (
	"errors"
	"strings"
	"testing"
)

func TestParseBearerTakesOneBearerTokenAndRefusesTheRest(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
		err    error
	}{
		{"a bearer token", []string{"Bearer k-123"}, "k-123", nil},
		{"the scheme in any case", []string{"bearer k-123"}, "k-123", nil},
		{"spaces before the token", []string{"Bearer   k-123"}, "k-123", nil},
		{"no header", nil, "", ErrNoKey},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", ErrMalformed},
		{"another scheme", []string{"Basic dXNlcjpwYXNz"}, "", ErrMalformed},
		{"a bare token", []string{"k-123"}, "", ErrMalformed},
		{"an empty token", []string{"Bearer "}, "", ErrMalformed},
		{"a token with a space", []string{"Bearer k 123"}, "", ErrMalformed},
		{"a token with a newline", []string{"Bearer k\n123"}, "", ErrMalformed},
		{"a token with a non-ASCII byte", []string{"Bearer k\xc3\xa9"}, "", ErrMalformed},
		{"a token too long", []string{"Bearer " + strings.Repeat("k", maxKeyLen+1)}, "", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBearer(tt.values)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("ParseBearer(%q) = %q, %v; want %q, %v", tt.values, got, err, tt.want, tt.err)
			}
		})
	}
}

// FuzzParseBearer: whatever a sender puts in the header, the parser
// returns a key that can travel in a header again, or an error that does
// not repeat what was sent.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer k-123", "bearer  x", "Basic a", "", "Bearer ", "Bearer a b", "Bearer \x00"} {
		f.Add(s, "")
		f.Add(s, "Bearer second")
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		values := []string{first}
		if second != "" {
			values = append(values, second)
		}
		key, err := ParseBearer(values)
		if err != nil {
			if key != "" {
				t.Fatalf("a key %q beside the error %v", key, err)
			}
			if len(first) > 8 && strings.Contains(err.Error(), first) {
				t.Fatalf("the error repeats the header: %v", err)
			}
			return
		}
		if len(values) != 1 || key == "" || len(key) > maxKeyLen || strings.ContainsAny(key, " \t\r\n") {
			t.Fatalf("ParseBearer(%q) accepted %q", values, key)
		}
		if !strings.HasSuffix(first, key) {
			t.Fatalf("the key %q is not the header's token (%q)", key, first)
		}
	})
}
