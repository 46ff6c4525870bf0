package tenant

import (
	"errors"
	"strings"
)

// Header is the metadata key the key travels in. gRPC metadata is lower
// case; client.Metadata.Get folds case for HTTP's canonical form.
const Header = "authorization"

// UserIDAttribute is the client.Info.Auth attribute in which prime_auth
// puts the user id the platform gave for the sender's key: what the
// gateway's status route answers by.
const UserIDAttribute = "prime.user_id"

// ErrNoKey says a request carried no Authorization header.
var ErrNoKey = errors.New("no Authorization header: send the trainer's platform key as Authorization: Bearer <key>")

// ErrMalformed says the header was not one Bearer token. It never
// includes what was sent: that may be a key.
var ErrMalformed = errors.New("the Authorization header is not one \"Bearer <key>\" (one header, scheme Bearer, a token of visible ASCII)")

// maxKeyLen bounds what is hashed and sent on to whoami; platform keys are
// well under it.
const maxKeyLen = 512

// ParseBearer takes a request's Authorization values and returns the key.
// Exactly one value, scheme Bearer in any case, one space or more, then a
// token of visible ASCII with nothing after it.
func ParseBearer(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrNoKey
	case 1:
	default:
		return "", ErrMalformed
	}
	scheme, rest, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrMalformed
	}
	key := strings.TrimLeft(rest, " ")
	if key == "" || len(key) > maxKeyLen {
		return "", ErrMalformed
	}
	for i := 0; i < len(key); i++ {
		if b := key[i]; b <= 0x20 || b >= 0x7f {
			return "", ErrMalformed
		}
	}
	return key, nil
}
