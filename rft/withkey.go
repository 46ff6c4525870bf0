package rft

import "errors"

// checkKey is New's rule for a key, shared by WithKey.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("prime: API key is empty")
	case !validHeaderValue(key):
		// Named, not shown: the value is the secret.
		return errors.New("prime: API key contains control characters (a stray newline?)")
	}
	return nil
}

// WithKey is the same client speaking for another key: a multi-tenant
// gateway sends each tenant's requests with that tenant's own key, over one
// set of connections, one retry policy and one prefix. The copy shares the
// HTTP clients; c is unchanged.
func (c *Client) WithKey(key string) (*Client, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	cp := *c
	cp.key = key
	return &cp, nil
}

// WithKey is the same Prime Traces client for another key (Client.WithKey).
func (t *Traces) WithKey(key string) (*Traces, error) {
	c, err := t.c.WithKey(key)
	if err != nil {
		return nil, err
	}
	return &Traces{c: c, endpoint: t.endpoint}, nil
}
