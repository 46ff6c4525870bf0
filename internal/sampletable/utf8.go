package sampletable

import (
	"strings"
	"unicode/utf8"
)

// validText is s with every invalid UTF-8 sequence replaced by U+FFFD, as a
// Parquet utf8 column and the JSON columns require. Chat text is valid
// nearly always, and utf8.ValidString checks it eight ASCII bytes at a time
// where strings.ToValidUTF8 decodes rune by rune (20× slower on a 50 KB
// prompt), so the check comes first and valid text is returned as it is.
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
