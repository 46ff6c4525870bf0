// Package reject holds the reason codes of everything the exporter does not
// deliver, and the error that carries one.
//
// Rejections are data lost: a value, record or episode that cannot be sent
// and will not be retried. Skips are not losses: work the exporter leaves
// out on purpose (eval work, off-cadence steps) or has already delivered.
// The two are counted apart so a loss never hides among the skips.
//
// The codes are the values of the `reason` attribute of the exporter's
// self-telemetry counters and of its log lines; dashboards and alerts key
// on them, so they do not change lightly.
package reject

import "fmt"

// Reason is a reason code.
type Reason string

// Rejections of the input mapping (stepmetrics, sampletable): the value or
// record does not fit what telemetry.md specifies.
const (
	// NoStep: a prime.episode record has no step, or a point or
	// prime.metrics event has neither a step nor a time to key its row by.
	NoStep Reason = "no_step"
	// BadStep: the step is not an integer, or the step metric disagrees with itself.
	BadStep Reason = "bad_step"
	// NonFinite: a metric value is NaN or ±Inf, which the metrics post cannot carry.
	NonFinite Reason = "non_finite"
	// BadValue: a value does not fit its metric or column, or a prime.metrics body does not parse.
	BadValue Reason = "bad_value"
	// NoValues: a prime.metrics event carries no values at all.
	NoValues Reason = "no_values"
	// BadWorkType: prime.work.type is neither "train" nor "eval".
	BadWorkType Reason = "bad_work_type"
	// BadBody: a prime.episode body is neither a map nor text, or looks like JSON but does not parse.
	BadBody Reason = "bad_body"
	// NoSampleID: an evaluation's prime.episode body that is not a native
	// document has no sample_id, which a sample passed through as it is
	// must carry.
	NoSampleID Reason = "no_sample_id"
)

// Rejections of the exporter itself: the data fit, but there is no run to
// take it, or the platform refused it for good, so a retry cannot help.
const (
	// NoIdentity: the resource names no run.
	NoIdentity Reason = "no_identity"
	// RunClosed: data for a run that is already closed out.
	RunClosed Reason = "run_closed"
	// RunRefused: the platform refused, for good, to create the run.
	RunRefused Reason = "run_refused"
	// NoTeam: the run cannot be created because no team is known for it.
	NoTeam Reason = "no_team"
	// Unauthorized: the platform refused the API key; nothing is sent until it is fixed.
	Unauthorized Reason = "unauthorized"
	// RunLimit: a tenant of a multi-tenant gateway has tenants::max_open_runs
	// runs open, and the data would open one more.
	RunLimit Reason = "run_limit"
	// NoKey: a multi-tenant gateway got data without a sender's platform
	// key in its metadata (no Authorization header, or include_metadata off).
	NoKey Reason = "no_key"
	// KeyRefused: a multi-tenant gateway's data whose sender's key the
	// platform refuses (whoami answered 401).
	KeyRefused Reason = "key_refused"
	// PlatformRejected: the platform refused a metrics post (a step's or a time's row) for good.
	PlatformRejected Reason = "platform_rejected"
	// EpisodeTooLarge: an episode is larger than samples.max_episode_bytes.
	EpisodeTooLarge Reason = "episode_too_large"
	// UploadRejected: presigning, uploading or confirming a sample object was refused for good.
	UploadRejected Reason = "upload_rejected"
	// TracesRejected: Prime Traces refused a batch of episode documents for
	// good (400, 401, 403 other than an account without Prime Traces, 409),
	// or refused the account after it had committed documents of the run.
	TracesRejected Reason = "traces_rejected"
	// SamplesUncertain: an evaluation's samples whose append lost its
	// answer (a 502/503/504, a timeout): the platform may have stored them
	// or not, and the append is not replayable, so they are not sent
	// again.
	SamplesUncertain Reason = "eval_samples_uncertain"
)

// Ambient metrics (the host's, the GPUs', an inference server's), which
// join a run and never make one.
const (
	// AmbientNoRun: ambient data that names no run (no identity, no pod a
	// trainer announced), or whose run did not open within ambient::wait.
	AmbientNoRun Reason = "ambient_no_run"
	// AmbientKeyCap: an ambient key past its run's ambient::max_keys.
	AmbientKeyCap Reason = "ambient_key_cap"
	// ScrapeFailed: a scrape of an ambient target failed (down, or text
	// that does not parse): the prometheus receiver's up was 0.
	ScrapeFailed Reason = "scrape_failed"
	// AmbientRunEnded: ambient data for a run that is closing or closed;
	// the host goes on being sampled after its run, so this is a skip.
	AmbientRunEnded Reason = "ambient_run_ended"
)

// Skips: left out on purpose or because they are delivered already; not
// lost.
const (
	// RunKind: data of a run whose prime.run.kind is not handled (not train).
	RunKind Reason = "run_kind"
	// Eval: an eval episode, which has no row in the sample table.
	Eval Reason = "eval"
	// OffCadence: an episode of a step the sample cadence does not upload.
	OffCadence Reason = "off_cadence"
	// EmptyTrajectory: an episode with no trajectory, which has no row.
	EmptyTrajectory Reason = "empty_trajectory"
	// AlreadyDelivered: an episode a confirmed object already carries (a retry or a replay).
	AlreadyDelivered Reason = "already_delivered"
	// AlreadySent: metric values the platform already has for their step.
	AlreadySent Reason = "already_sent"
	// NotAnEvent: a log record that is none of the prime.* events.
	NotAnEvent Reason = "not_an_event"
)

// Coercions: a value that arrives in a form Python producers are known to
// send is taken as the Python user meant it, and delivered. They are counted
// apart from rejections and skips (otelcol_exporter_prime_records_coerced), so
// that a trainer can find and fix them without losing data.
const (
	// NumberString: a step or metric value that arrives as a decimal-number
	// string (the OTel Python SDK stringifies numpy scalars), taken as that
	// number.
	NumberString Reason = "number_string"
	// BoolValue: a bool metric value, taken as 1 or 0.
	BoolValue Reason = "bool"
	// JSONText: a non-string prompt, answer or tag of a column-keyed episode,
	// stored as its JSON text.
	JSONText Reason = "json_text"
)

// Rejection is one thing that cannot be delivered, with its reason code and
// the field it is about.
type Rejection struct {
	Reason Reason
	// Field is the attribute, body key or metric the rejection is about
	// ("prime.work.step", "body.reward", "loss{env=a}").
	Field string
	// Err says what is wrong, naming Field and the type found.
	Err error
}

// Error is Err's message.
func (r *Rejection) Error() string { return r.Err.Error() }

// Unwrap gives Err, so errors.Is and errors.AsType see through.
func (r *Rejection) Unwrap() error { return r.Err }

// New is a Rejection whose Err is fmt.Errorf(format, args...).
func New(reason Reason, field, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Field: field, Err: fmt.Errorf(format, args...)}
}

// Signals, the counters' "signal" attribute beside the reason: here, where
// every side that counts (the lifecycle, the upload, the push) can name
// them without importing another.
const (
	SignalMetrics = "metrics"
	SignalLogs    = "logs"
)
