package rfttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// apiError is a refusal the platform answers with {"detail": …}.
type apiError struct {
	Status int
	Detail string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Detail) }

func refuse(status int, format string, args ...any) *apiError {
	return &apiError{Status: status, Detail: fmt.Sprintf(format, args...)}
}

// detailBody is FastAPI's error body.
type detailBody struct {
	Detail string `json:"detail"`
}

// successBody is the platform's {"data":{"status":"success"}} answer.
func successBody() map[string]any {
	return map[string]any{"data": map[string]any{"status": "success"}}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil { // only this package's own values reach here
		status, b = http.StatusInternalServerError, []byte(`{"detail":"rfttest: unencodable response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, err error) {
	ae, ok := errors.AsType[*apiError](err)
	if !ok {
		ae = refuse(http.StatusInternalServerError, "rfttest: %v", err)
	}
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeJSON(w, ae.Status, detailBody{Detail: ae.Detail})
}
