package rfttest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// presignExpiry is the lifetime the fake reports for a presigned URL; it is
// not enforced.
const presignExpiry = 900

// presign handles POST <prefix>/rft/samples/presign: it mints a fresh key
// for one step's object and a URL signed for that key. Minting has no other
// effect, so a replay only leaves an unused key behind.
func (s *Server) presign(who *account, f *fields, _ string) (reply, error) {
	runID := f.str("run_id", required)
	step := f.count("step", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	return s.withOpenRun(who, runID, "upload samples to", func(*runState) (reply, error) {
		s.keySeq++
		// uuid-shaped but sequential, so keys are unique and tests repeatable.
		key := fmt.Sprintf("runs/%s/step_%d_00000000-0000-4000-8000-%012x.parquet", runID, step, s.keySeq)
		s.objects[key] = &objectState{runID: runID, step: step, key: key}
		return reply{http.StatusOK, map[string]any{"data": map[string]any{
			"presignedUrl": s.presignedURL(key),
			"s3Key":        key,
			"expiresIn":    presignExpiry,
		}}}, nil
	})
}

// presignedURL is URL()/storage/<key>?X-Sig=<signature of key>.
func (s *Server) presignedURL(key string) string {
	segments := strings.Split(key, "/")
	for i, seg := range segments {
		segments[i] = url.PathEscape(seg)
	}
	q := url.Values{sigParam: {s.sign(key)}}
	return s.ts.URL + storagePath + strings.Join(segments, "/") + "?" + q.Encode()
}

// confirm handles POST <prefix>/rft/samples/confirm: it adds an uploaded
// object to the run's table. The key must have been presigned for this run
// and step and then uploaded; confirming it again changes nothing.
func (s *Server) confirm(who *account, f *fields, _ string) (reply, error) {
	runID := f.str("run_id", required)
	step := f.count("step", required)
	key := f.nonEmptyStr("s3_key", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	return s.withOpenRun(who, runID, "confirm samples of", func(r *runState) (reply, error) {
		o, ok := s.objects[key]
		switch {
		case !ok || o.runID != runID:
			return reply{}, refuse(http.StatusBadRequest, "s3_key %s was not presigned for run %s", key, runID)
		case o.step != step:
			return reply{}, refuse(http.StatusBadRequest, "s3_key %s was presigned for step %d, not step %d", key, o.step, step)
		case !o.put:
			return reply{}, refuse(http.StatusBadRequest, "s3_key %s has not been uploaded", key)
		}
		if !o.confirmed {
			o.confirmed = true
			r.confirmed = append(r.confirmed, o)
		}
		return reply{http.StatusOK, successBody()}, nil
	})
}
