package tenant

import (
	"context"
	"fmt"
	"net/http"

	"github.com/primeintellect/primeexporter/rft"
)

// Whoami is the Check that asks the platform's whoami route with c's
// settings and the key in question.
func Whoami(c *rft.Client) Check {
	return func(ctx context.Context, key string) (string, error) {
		kc, err := c.WithKey(key)
		if err != nil {
			// A key no header can carry is no key the platform issued.
			return "", fmt.Errorf("%w: %v", ErrRefused, err)
		}
		u, err := kc.Whoami(ctx)
		if e, ok := rft.AsError(err); ok && e.StatusCode == http.StatusUnauthorized {
			return "", ErrRefused
		}
		if err != nil {
			return "", err
		}
		return u.ID, nil
	}
}
