package rft

import (
	"context"
	"encoding/json"
	"net/http"
)

const opWhoami = "who am I"

// User is who a key belongs to.
type User struct {
	ID string
}

// Whoami asks who the key belongs to (GET /api/v1/user/whoami, the route
// the platform's CLI checks a key with) and returns the user's id. A 401
// here, and only here, says the key itself is refused: another route's
// 401 may be about what was asked of it.
//
// Replayable: it reads. Always under /api/v1, as the user routes are; a
// hosted run's per-run token on /api/internal may not be let in there.
func (c *Client) Whoami(ctx context.Context) (User, error) {
	r := route{op: opWhoami, method: http.MethodGet, path: "/user/whoami", replayable: true}
	ex, err := c.send(ctx, r, c.evalPrefix()+r.path, nil, true)
	if err != nil {
		return User{}, err
	}
	var a struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(ex.body, &a) != nil || a.Data.ID == "" {
		return User{}, c.protocolError(opWhoami, ex, "no data.id ("+keysOf(ex.body)+")")
	}
	return User{ID: a.Data.ID}, nil
}
