package rft

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The operation names an *Error of the evaluations API carries in Op.
const (
	opResolveEnv    = "resolve environment"
	opLookupEnv     = "look up environment"
	opCreateEval    = "create evaluation"
	opAppendSamples = "append samples"
	opUpdateEval    = "update evaluation"
	opFinalizeEval  = "finalize evaluation"
	opEvalStatus    = "set evaluation status"
)

// maxStatusMessage is the most characters of error_message on route 6b.
const maxStatusMessage = 4096

// EnvironmentRef names one environment of an evaluation the way a user
// gives it: exactly one of an explicit hub ID (no lookup), a slug Owner/Name
// (looked up, route 2) or a bare Name (resolved by the hub's get-or-create,
// route 1). VersionID pins a version and passes through.
type EnvironmentRef struct {
	ID        string
	Owner     string // with Name: the slug owner/name
	Name      string
	VersionID string
}

// ParseEnvironmentRef reads one entry of prime.run.environments:
// "owner/name" is a slug, anything else a name, and "@version" at the end
// pins version_id. A value it cannot read unambiguously is an error rather
// than a name: resolving it would get-or-create an environment of that
// name.
func ParseEnvironmentRef(s string) (EnvironmentRef, error) {
	v := strings.TrimSpace(s)
	bad := func(why string) (EnvironmentRef, error) {
		return EnvironmentRef{}, errors.New("prime: environment " + strconv.Quote(s) + " " + why)
	}
	if v == "" {
		return bad("is empty")
	}
	var ref EnvironmentRef
	if i := strings.LastIndexByte(v, '@'); i >= 0 {
		v, ref.VersionID = v[:i], v[i+1:]
		if ref.VersionID == "" {
			return bad(`has nothing after "@": write name@version, or leave the "@" out`)
		}
	}
	owner, name, slug := strings.Cut(v, "/")
	switch {
	case v == "":
		return bad(`has no name before "@"`)
	case slug && (owner == "" || name == "" || strings.Contains(name, "/")):
		return bad("is not a hub slug owner/name nor a plain name")
	case slug:
		ref.Owner, ref.Name = owner, name
	default:
		ref.Name = v
	}
	return ref, nil
}

// String renders the reference as a user writes it.
func (r EnvironmentRef) String() string {
	s := r.Name
	switch {
	case r.ID != "":
		s = r.ID
	case r.Owner != "":
		s = r.Owner + "/" + r.Name
	}
	if r.VersionID != "" {
		s += "@" + r.VersionID
	}
	return s
}

// ShortName is the environment's name without its owner (the part after
// "/" of a slug), or its ID when it was given by ID: the create body's
// dataset, and the stem of DefaultEvaluationName.
func (r EnvironmentRef) ShortName() string {
	if r.Name != "" {
		return r.Name
	}
	return r.ID
}

// DefaultEvaluationName is the name of an evaluation created without one:
// "<stem>-<8 hex>", the stem being the first environment's ShortName.
func DefaultEvaluationName(stem string) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return stem + "-" + hex.EncodeToString(b[:])
}

// ResolveEnvironments turns every reference into the create body's
// {"id", "version_id"?}, in order: an ID as it is, a slug through route 2,
// a name through route 1. The first that cannot be resolved fails the
// whole list, with the reference named in the error; it is never skipped,
// since an evaluation attached to the wrong environments looks like a
// success. No reference at all, or one that is not exactly one of the
// three kinds, is a configuration error, refused before any request.
func (c *Client) ResolveEnvironments(ctx context.Context, refs []EnvironmentRef, teamID string) ([]Environment, error) {
	if len(refs) == 0 {
		return nil, c.refuse(opResolveEnv, "no environments: an evaluation needs at least one")
	}
	for i, ref := range refs {
		if (ref.ID != "") == (ref.Name != "") || (ref.Owner != "" && ref.Name == "") {
			return nil, c.refuse(opResolveEnv, "environments["+strconv.Itoa(i)+"] must give exactly one of an ID, a slug owner/name or a name")
		}
	}
	out := make([]Environment, 0, len(refs))
	for _, ref := range refs {
		var id string
		var err error
		switch {
		case ref.ID != "":
			id = ref.ID
		case ref.Owner != "":
			id, err = c.LookupEnvironment(ctx, ref.Owner, ref.Name)
		default:
			id, err = c.ResolveEnvironment(ctx, ref.Name, teamID)
		}
		if err != nil {
			if e, ok := AsError(err); ok {
				e.Message = clip(c.scrub(strings.TrimSuffix("environment "+strconv.Quote(ref.String())+": "+e.Message, ": ")))
			}
			return nil, err
		}
		out = append(out, Environment{ID: id, VersionID: ref.VersionID})
	}
	return out, nil
}

// ResolveEnvironment finds an environment by name through the hub (route
// 1, POST /environmentshub/resolve) and returns its id, data.id of the
// answer. teamID is sent when not empty.
//
// Replayable: the hub's resolve is a get-or-create, so a second one finds
// what the first made.
func (c *Client) ResolveEnvironment(ctx context.Context, name, teamID string) (string, error) {
	if name == "" {
		return "", c.refuse(opResolveEnv, "the environment name is empty")
	}
	ex, err := c.evalCall(ctx, route{
		op: opResolveEnv, method: http.MethodPost, path: "/environmentshub/resolve", replayable: true,
	}, resolveEnvironmentRequest{Name: name, TeamID: teamID})
	if err != nil {
		return "", err
	}
	var a hubAnswer
	if json.Unmarshal(ex.body, &a) == nil {
		if id := dataID(a.Data); id != "" {
			return id, nil
		}
	}
	return "", c.protocolError(opResolveEnv, ex, "no data.id ("+keysOf(ex.body)+")")
}

// LookupEnvironment finds an environment by its hub slug owner/name (route
// 2, GET /environmentshub/{owner}/{name}/@latest) and returns its id:
// data.id, else the top-level id.
//
// Replayable: it reads.
func (c *Client) LookupEnvironment(ctx context.Context, owner, name string) (string, error) {
	if owner == "" || name == "" {
		return "", c.refuse(opLookupEnv, "the slug needs both an owner and a name")
	}
	ex, err := c.evalCall(ctx, route{
		op: opLookupEnv, method: http.MethodGet, replayable: true,
		path: "/environmentshub/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/@latest",
	}, nil)
	if err != nil {
		return "", err
	}
	var a hubAnswer
	if json.Unmarshal(ex.body, &a) == nil {
		if id := firstNonEmpty(dataID(a.Data), a.ID); id != "" {
			return id, nil
		}
	}
	return "", c.protocolError(opLookupEnv, ex, "no data.id and no id ("+keysOf(ex.body)+")")
}

// dataID reads the id of a hub answer's data object, "" if there is none.
func dataID(raw json.RawMessage) string {
	var d struct {
		ID string `json:"id"`
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &d) != nil {
		return ""
	}
	return d.ID
}

// CreateEvaluation registers an evaluation (route 3, POST /evaluations/,
// trailing slash included) and returns it; the answer must carry
// evaluation_id. Environments must already be resolved (ResolveEnvironments);
// a request without a name, an environment, an environment id or a
// dataset is refused before sending.
//
// Not replayable: the platform registers an evaluation per request, so
// after a lost answer (502, 503, 504, read timeout, reset) a retry would
// register a second one. It is retried in place only when the request
// provably was not processed: never sent, or a 429.
func (c *Client) CreateEvaluation(ctx context.Context, req CreateEvaluationRequest) (Evaluation, error) {
	switch {
	case req.Name == "":
		return Evaluation{}, c.refuse(opCreateEval, "the name is empty (the default is <first environment's name>-<8 hex>, DefaultEvaluationName)")
	case len(req.Environments) == 0:
		return Evaluation{}, c.refuse(opCreateEval, "no environments: an evaluation needs at least one")
	case req.Dataset == "":
		return Evaluation{}, c.refuse(opCreateEval, "the dataset is empty (it is the first environment's name)")
	}
	for i, e := range req.Environments {
		if e.ID == "" {
			return Evaluation{}, c.refuse(opCreateEval, "environments["+strconv.Itoa(i)+"] has no id: resolve it first")
		}
	}
	ex, err := c.evalCall(ctx, route{op: opCreateEval, method: http.MethodPost, path: "/evaluations/"}, req)
	if err != nil {
		return Evaluation{}, err
	}
	var resp createEvaluationResponse
	if json.Unmarshal(ex.body, &resp) != nil || resp.EvaluationID == "" {
		return Evaluation{}, c.protocolError(opCreateEval, ex, "no evaluation_id ("+keysOf(ex.body)+")")
	}
	return Evaluation{ID: resp.EvaluationID, Name: resp.Name, Status: resp.Status, ViewerURL: resp.ViewerURL}, nil
}

// AppendSamples appends samples to an evaluation (route 4, POST
// /evaluations/{id}/samples). Each sample is one JSON object, sent as
// given, compacted; the request must fit MaxSamplesRequestBytes, so cut
// larger sets with SampleBatches first. No samples, a sample that is not a
// JSON object, or too many bytes are refused before sending.
//
// Not replayable: the platform appends, so after a lost answer the samples
// may already be stored and a retry would store them twice. It is retried
// in place only when the request provably was not processed (never sent,
// or a 429); after an ambiguous failure (Error.Ambiguous) the batch may be
// lost or stored, and the caller counts it rather than sending it again.
func (c *Client) AppendSamples(ctx context.Context, evaluationID string, samples []json.RawMessage) error {
	if evaluationID == "" {
		return c.refuse(opAppendSamples, "the evaluation id is empty")
	}
	body, why := samplesBody(samples, MaxSamplesRequestBytes)
	if why != "" {
		return c.refuse(opAppendSamples, why)
	}
	_, err := c.evalSend(ctx, route{
		op: opAppendSamples, method: http.MethodPost, path: "/evaluations/" + url.PathEscape(evaluationID) + "/samples",
	}, body)
	return err
}

// UpdateEvaluation sends the config and the summary (route 5, PUT
// /evaluations/{id}): metadata replaces the whole metadata document, so
// pass the full config, or nil to leave it (an attached evaluation's).
// Non-finite numbers are removed from the summary first (FiniteSummary).
// When both are empty no request is made.
//
// Replayable: it sets the same documents again.
func (c *Client) UpdateEvaluation(ctx context.Context, evaluationID string, metadata, summary map[string]any) error {
	if evaluationID == "" {
		return c.refuse(opUpdateEval, "the evaluation id is empty")
	}
	metrics, _ := FiniteSummary(summary)
	if len(metadata) == 0 && len(metrics) == 0 {
		return nil
	}
	_, err := c.evalCall(ctx, route{
		op: opUpdateEval, method: http.MethodPut, path: "/evaluations/" + url.PathEscape(evaluationID), replayable: true,
	}, updateEvaluationRequest{Metadata: metadata, Metrics: metrics})
	return err
}

// FinalizeEvaluation closes a completed evaluation with its summary (route
// 6a, POST /evaluations/{id}/finalize, {"metrics": summary}, {} when
// empty). Non-finite numbers are removed from the summary first.
//
// Not replayable: finalize moves the evaluation to COMPLETED once, and the
// spec gives a repeat no meaning (a 409 here is an error, unlike on route
// 6b). It is retried in place only when the request provably was not
// processed: never sent, or a 429.
func (c *Client) FinalizeEvaluation(ctx context.Context, evaluationID string, summary map[string]any) error {
	if evaluationID == "" {
		return c.refuse(opFinalizeEval, "the evaluation id is empty")
	}
	metrics, _ := FiniteSummary(summary)
	if metrics == nil {
		metrics = map[string]any{} // {} rather than null
	}
	_, err := c.evalCall(ctx, route{
		op: opFinalizeEval, method: http.MethodPost, path: "/evaluations/" + url.PathEscape(evaluationID) + "/finalize",
	}, finalizeEvaluationRequest{Metrics: metrics})
	return err
}

// SetEvaluationStatus closes an evaluation that did not complete (route
// 6b, PUT /evaluations/{id}, {"status", "error_message"?}): FAILED (failed
// and crashed runs) or CANCELLED. message is cut to 4,096 characters and
// left out when empty.
//
// Replayable: a 409 means the evaluation is already closed (by a launcher,
// or by an earlier attempt whose answer was lost), which is what was
// wanted.
func (c *Client) SetEvaluationStatus(ctx context.Context, evaluationID string, status EvaluationStatus, message string) error {
	switch {
	case evaluationID == "":
		return c.refuse(opEvalStatus, "the evaluation id is empty")
	case status != EvaluationFailed && status != EvaluationCancelled:
		return c.refuse(opEvalStatus, "status "+strconv.Quote(string(status))+` is not "FAILED" or "CANCELLED" (a completed evaluation is finalized)`)
	}
	_, err := c.evalCall(ctx, route{
		op: opEvalStatus, method: http.MethodPut, path: "/evaluations/" + url.PathEscape(evaluationID),
		replayable: true, conflictIsSuccess: true,
	}, evaluationStatusRequest{Status: status, ErrorMessage: cutRunes(message, maxStatusMessage)})
	return err
}

// cutRunes keeps the first n characters of s, as valid UTF-8.
func cutRunes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

// FiniteSummary is summary without the numbers JSON cannot carry (NaN,
// ±Inf), removed at any depth of map[string]any, []any, map[string]float64
// and []float64, and the paths it removed ("avg_metrics.acc", "xs[2]"),
// sorted. summary is not changed: the maps and lists on the way are
// copies. Values of other types are kept as they are.
func FiniteSummary(summary map[string]any) (clean map[string]any, dropped []string) {
	if summary == nil {
		return nil, nil
	}
	v, _ := finite(summary, "", &dropped)
	slices.Sort(dropped)
	return v.(map[string]any), dropped
}

// finite returns v without its non-finite numbers; keep=false when v is one.
func finite(v any, path string, dropped *[]string) (out any, keep bool) {
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch v := v.(type) {
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			*dropped = append(*dropped, path)
			return nil, false
		}
	case float32:
		return finite(float64(v), path, dropped)
	case map[string]any:
		if v == nil {
			return v, true // null stays null
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			if e, ok := finite(e, at(k), dropped); ok {
				m[k] = e
			}
		}
		return m, true
	case map[string]float64:
		m := make(map[string]any, len(v))
		for k, e := range v {
			if e, ok := finite(e, at(k), dropped); ok {
				m[k] = e
			}
		}
		return m, true
	case []any:
		if v == nil {
			return v, true
		}
		l := make([]any, 0, len(v))
		for i, e := range v {
			if e, ok := finite(e, path+"["+strconv.Itoa(i)+"]", dropped); ok {
				l = append(l, e)
			}
		}
		return l, true
	case []float64:
		l := make([]any, 0, len(v))
		for i, e := range v {
			if e, ok := finite(e, path+"["+strconv.Itoa(i)+"]", dropped); ok {
				l = append(l, e)
			}
		}
		return l, true
	}
	return v, true
}

// evalPrefix is the API prefix of the evaluations API: always /api/v1,
// hosted evaluations included, since the internal router serves training
// only. A client built for …/api/internal sends its evaluation calls to
// …/api/v1 on the same host.
func (c *Client) evalPrefix() string {
	if p, ok := strings.CutSuffix(c.prefix, internalPrefix); ok {
		return p + publicPrefix
	}
	return c.prefix
}

// evalCall sends payload as compact JSON on r (nil: no body, for a GET).
func (c *Client) evalCall(ctx context.Context, r route, payload any) (exchange, error) {
	var body []byte
	if payload != nil {
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return exchange{}, c.refuse(r.op, "cannot encode the request as JSON: "+err.Error())
		}
	}
	return c.evalSend(ctx, r, body)
}

// evalSend is call for the evaluations API: the same retries, classes,
// Retry-After and scrubbing, and the same rule for what may be sent again,
// but the headers evals-api.md lists (the key as Authorization: Bearer
// only, Content-Type only with a body) and the /api/v1 prefix.
func (c *Client) evalSend(ctx context.Context, r route, body []byte) (exchange, error) {
	return c.send(ctx, r, c.evalPrefix()+r.path, body, false)
}
