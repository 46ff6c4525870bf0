package rft

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// CreateRun registers a run (POST /rft/external-runs → 201).
//
// Not replayable: the platform registers a run per request, so after a
// lost response (502/503/504, read timeout, reset) a retry would register a
// second run. It is retried in place only when the request provably was not
// processed: never sent, or a 429.
func (c *Client) CreateRun(ctx context.Context, req CreateRunRequest) (Run, error) {
	ex, err := c.call(ctx, route{op: opCreateRun, method: http.MethodPost, path: "/rft/external-runs"}, req)
	if err != nil {
		return Run{}, err
	}
	var resp createRunResponse
	if json.Unmarshal(ex.body, &resp) != nil || resp.Run == nil || resp.Run.ID == "" {
		return Run{}, c.protocolError(opCreateRun, ex, "no run.id ("+keysOf(ex.body)+")")
	}
	return Run{ID: resp.Run.ID, Name: resp.Run.Name, Status: resp.Run.Status}, nil
}

// Finalize closes a completed run (POST /rft/finalize).
//
// Replayable: finalize is a compare-and-set on the server, "already
// finalized" is a success, and a 409 (closed some other way) is one too.
func (c *Client) Finalize(ctx context.Context, runID string, exitCode int) error {
	if runID == "" {
		return c.refuse(opFinalize, "the run id is empty")
	}
	_, err := c.call(ctx, route{
		op: opFinalize, method: http.MethodPost, path: "/rft/finalize",
		replayable: true, conflictIsSuccess: true,
	}, finalizeRequest{RunID: runID, ExitCode: exitCode})
	return err
}

// SetStatus closes a run with a terminal status (PUT
// /rft/external-runs/{run_id}/status). message is sent as error_message,
// and left out when empty.
//
// Replayable: a 409 means the run is already closed (by a launcher, or by
// an earlier attempt whose answer was lost), which is what was wanted.
func (c *Client) SetStatus(ctx context.Context, runID string, status Status, message string) error {
	switch {
	case runID == "":
		return c.refuse(opSetStatus, "the run id is empty")
	case status != StatusCompleted && status != StatusFailed:
		return c.refuse(opSetStatus, "status "+string(status)+` is not "completed" or "failed", the only values the API knows`)
	}
	_, err := c.call(ctx, route{
		op: opSetStatus, method: http.MethodPut, path: "/rft/external-runs/" + url.PathEscape(runID) + "/status",
		replayable: true, conflictIsSuccess: true,
	}, statusRequest{Status: status, ErrorMessage: message})
	return err
}
