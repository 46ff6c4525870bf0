package rfttest

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
)

// sigParam is the query parameter that carries a presigned URL's signature.
const sigParam = "X-Sig"

// sign is the signature of a key under this server's secret: only keys the
// server minted have one.
func (s *Server) sign(key string) string {
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(key))
	return hex.EncodeToString(mac.Sum(nil))
}

// servePut handles PUT /storage/<key>?X-Sig=…, the fake's object storage.
// Like S3 with a presigned URL, it trusts the signature alone: any other
// credential, a wrong signature or a Content-Type other than the signed one
// is a 403. A second PUT of a key overwrites the object. In discard mode
// (discard.go) the body is already gone: only its summary arrives.
func (s *Server) servePut(w http.ResponseWriter, r *http.Request, key string, body []byte) {
	if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
		writeStorageError(w, http.StatusForbidden, "InvalidRequest",
			"Only one auth mechanism allowed; the presigned URL already carries its credentials")
		return
	}
	got, err := hex.DecodeString(r.URL.Query().Get(sigParam))
	want, _ := hex.DecodeString(s.sign(key))
	if err != nil || !hmac.Equal(got, want) {
		writeStorageError(w, http.StatusForbidden, "SignatureDoesNotMatch",
			"The request signature does not match the key")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/parquet" {
		writeStorageError(w, http.StatusForbidden, "SignatureDoesNotMatch",
			"Content-Type must be application/parquet, as signed")
		return
	}

	keep, etag := body, ""
	sum, discarded := summarized(r)
	if discarded {
		if sum.err != nil { // discard mode cannot keep what it could not count
			writeStorageError(w, http.StatusBadRequest, "InvalidArgument", sum.err.Error())
			return
		}
		keep, etag = nil, sum.etag
	} else {
		md := md5.Sum(body)
		etag = hex.EncodeToString(md[:])
	}

	s.mu.Lock()
	o, ok := s.objects[key]
	if ok {
		o.body = clone(keep)
		if discarded {
			s.discard.rows[key] = sum.rows
		}
		if !o.put {
			o.put = true
			if run := s.runs[o.runID]; run != nil {
				run.uploaded = append(run.uploaded, o)
			}
		}
	}
	s.mu.Unlock()
	if !ok { // signed but unknown cannot happen; answer as S3 would anyway
		writeStorageError(w, http.StatusNotFound, "NoSuchKey", "The key does not exist")
		return
	}
	w.Header().Set("ETag", fmt.Sprintf("%q", etag))
	w.WriteHeader(http.StatusOK)
}

// writeStorageError answers the way S3 does, in XML: clients must not expect
// a platform {"detail"} body from storage.
func writeStorageError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>", code, message)
}
