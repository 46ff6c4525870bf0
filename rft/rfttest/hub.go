package rfttest

import (
	"net/http"
	"slices"
	"strings"
)

// resolveEnvironment handles POST /api/v1/environmentshub/resolve (route
// 1), a get-or-create: the first environment of that name (in registration
// order, whatever its owner), or else a new one owned by the caller. A
// repeat finds what the first made, which is why the route is replayable.
func (s *Server) resolveEnvironment(_ *account, f *fields) (reply, error) {
	name := f.nonEmptyStr("name", required)
	team := f.nonEmptyStr("team_id", optional)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	if strings.Contains(name, "/") {
		// Stricter than the hub is known to be: a slug sent here would be
		// made into a new environment of that odd name.
		return reply{}, refuse(http.StatusBadRequest,
			"name %q is a slug: look it up with GET /environmentshub/{owner}/{name}/@latest", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.evals.envs, func(e *HubEnvironment) bool { return e.Name == name })
	var env *HubEnvironment
	if i >= 0 {
		env = s.evals.envs[i]
	} else {
		env = &HubEnvironment{ID: s.newEnvIDLocked(), Name: name, TeamID: team, Created: true}
		s.evals.envs = append(s.evals.envs, env)
	}
	return reply{http.StatusOK, map[string]any{"data": map[string]any{"id": env.ID, "name": env.Name}}}, nil
}

// lookupEnvironment handles GET
// /api/v1/environmentshub/{owner}/{name}/@latest (route 2): a read, and a
// 404 for a slug the hub does not have.
func (s *Server) lookupEnvironment(owner, name string) (reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.evals.envs, func(e *HubEnvironment) bool { return e.Owner == owner && e.Name == name })
	if i < 0 {
		return reply{}, refuse(http.StatusNotFound, "Environment %s/%s not found", owner, name)
	}
	env := s.evals.envs[i]
	return reply{http.StatusOK, map[string]any{"data": map[string]any{
		"id": env.ID, "owner": env.Owner, "name": env.Name,
	}}}, nil
}
