package rfttest

import (
	"fmt"
	"net/http"
	"strings"
)

// UserID is the user the server's own key (Options.APIKey) belongs to, as
// whoami answers; runs and evaluations added without an owner are this
// user's.
const UserID = "user-1"

// User is one user of the fake platform and the key it calls with.
type User struct {
	Key string // the API key; unique across the server
	ID  string // what whoami answers; the owner of what the key creates
	// Teams lists the teams the user may create runs for. nil leaves the
	// choice to Options.AllowedTeams alone; a non-nil list (even an empty
	// one) narrows it to its members: a create for any other team is a 403.
	Teams []string
}

// account is a User as the server keeps it; guarded by Server.mu.
type account struct {
	id      string
	teams   map[string]bool // nil: every team the server allows
	revoked bool
}

// keyHeaders says where a route takes the key.
type keyHeaders int

const (
	noKey       keyHeaders = iota // object storage: the presigned URL is the credential
	bothHeaders                   // RFT routes and whoami (see authenticate)
	bearerOnly                    // evaluations API and Prime Traces
)

func (r Route) keyHeaders() keyHeaders {
	switch r {
	case RouteCreate, RouteMetrics, RoutePresign, RouteConfirm, RouteFinalize, RouteStatus, RouteWhoami:
		return bothHeaders
	case RouteTraces, RouteEnvResolve, RouteEnvLookup, RouteEvalCreate, RouteEvalSamples, RouteEvalUpdate, RouteEvalFinalize:
		return bearerOnly
	}
	return noKey
}

// The details of a refused key; they never echo what was sent.
const (
	badBearer = "Invalid or missing API key in the Authorization header (want: Bearer <key>)"
	badAPIKey = "Invalid or missing API key in the x-api-key header"
)

// AddUser lets one more user call the server from now on. It panics on a
// user without a Key or an ID, or whose Key is already known (revoked keys
// included): a key that opened two users' runs would let a test pass for
// the wrong reason.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(u)
}

func (s *Server) addUserLocked(u User) {
	switch {
	case u.Key == "" || u.ID == "":
		panic("rfttest: a User needs a Key and an ID")
	case s.users[u.Key] != nil:
		panic(fmt.Sprintf("rfttest: the key of user %q is already in use", u.ID))
	}
	a := &account{id: u.ID}
	if u.Teams != nil {
		a.teams = make(map[string]bool, len(u.Teams))
		for _, team := range u.Teams {
			a.teams[team] = true
		}
	}
	s.users[u.Key] = a
}

// RevokeKey refuses key from now on, with a 401 on every route, whoami
// included, as the platform refuses a deleted key. The user's runs stay
// theirs; another key of the same ID still opens them. Revoking a key the
// server does not know changes nothing.
func (s *Server) RevokeKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.users[key]; a != nil {
		a.revoked = true
	}
}

// userOfKeyLocked is the live account a key opens, or nil.
func (s *Server) userOfKeyLocked(key string) *account {
	if a := s.users[key]; a != nil && !a.revoked {
		return a
	}
	return nil
}

// callerLocked resolves the key a request carries, where its route takes
// it, to the caller's account. Both headers must carry the same live key:
// the public router checks the Bearer token, the internal one x-api-key,
// and the client cannot know which one it talks to.
func (s *Server) callerLocked(h http.Header, kh keyHeaders) (*account, error) {
	if kh == noKey {
		return nil, nil
	}
	scheme, token, ok := strings.Cut(h.Get("Authorization"), " ")
	a := s.userOfKeyLocked(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || a == nil {
		return nil, refuse(http.StatusUnauthorized, badBearer)
	}
	if kh == bothHeaders && h.Get("X-Api-Key") != token {
		return nil, refuse(http.StatusUnauthorized, badAPIKey)
	}
	return a, nil
}

// authenticate is callerLocked for a handler, which does not hold the lock.
func (s *Server) authenticate(h http.Header, kh keyHeaders) (*account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callerLocked(h, kh)
}

// mayCreateForLocked says whether the account may create a run for team: the
// server's allow-list and the user's teams must both let it.
func (s *Server) mayCreateForLocked(a *account, team string) bool {
	return (s.allowedTeams == nil || s.allowedTeams[team]) && (a.teams == nil || a.teams[team])
}

// whoami serves GET /api/v1/user/whoami: the id of the key's user.
func (s *Server) whoami() endpoint {
	return endpoint{RouteWhoami, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		a, err := s.authenticate(r.Header, bothHeaders)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": a.id}})
	}}
}
