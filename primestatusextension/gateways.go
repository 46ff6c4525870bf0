package primestatusextension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
)

// gateways asks other collectors' status routes: the agent tier's
// gateways, each of which knows the runs routed to it (and, sharing a
// registry, every run of the fleet).
type gateways struct {
	urls    []string
	client  *http.Client
	timeout time.Duration
}

// newGateways builds the client of cfg's gateway_client, with the host's
// extensions for its auth: with prime_auth, each question goes with the
// key of the caller being answered, which a multi-tenant gateway's route
// answers by.
func newGateways(ctx context.Context, cfg *Config, extensions map[component.ID]component.Component, telemetry component.TelemetrySettings) (*gateways, error) {
	client, err := cfg.GatewayClient.ToClient(ctx, extensions, telemetry)
	if err != nil {
		return nil, fmt.Errorf("gateway_client: %w", err)
	}
	// A status route does not redirect; following one would ask
	// something else.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// gateway_client::timeout bounds each question through its context
	// (ask): one bound, one way to fail.
	client.Timeout = 0
	bases := make([]string, len(cfg.Gateways))
	for i, u := range cfg.Gateways {
		bases[i] = strings.TrimRight(u, "/")
	}
	return &gateways{urls: bases, client: client, timeout: cfg.GatewayClient.Timeout}, nil
}

// ask asks every gateway at once, within the timeout. The first answer
// other than unknown wins; if every gateway that answered said unknown,
// so does ask; if none answered, the error says what each did.
func (g *gateways) ask(ctx context.Context, q Query) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	type answer struct {
		st  Status
		err error
	}
	answers := make(chan answer, len(g.urls))
	query := q.values().Encode()
	for _, base := range g.urls {
		go func() {
			st, err := g.askOne(ctx, base+Path+"?"+query)
			if err != nil {
				err = fmt.Errorf("%s: %w", base, err)
			}
			answers <- answer{st, err}
		}()
	}
	var errs []error
	answered := false
	for range g.urls {
		a := <-answers
		switch {
		case a.err != nil:
			errs = append(errs, a.err)
		case a.st.State != StateUnknown:
			return a.st, nil
		default:
			answered = true
		}
	}
	if answered {
		return Status{State: StateUnknown}, nil
	}
	return Status{}, fmt.Errorf("no gateway answered: %w", errors.Join(errs...))
}

// askOne asks one gateway; anything but a 200 with a state is an error.
func (g *gateways) askOne(ctx context.Context, url string) (Status, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return Status{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return Status{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Status{}, err
	}
	var st Status
	if err := json.Unmarshal(body, &st); err != nil || (resp.StatusCode == http.StatusOK && st.State == "") {
		return Status{}, fmt.Errorf("answered %d with no status: %.200q", resp.StatusCode, body)
	}
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("answered %d: %s", resp.StatusCode, st.Error)
	}
	return st, nil
}

func (g *gateways) close() { g.client.CloseIdleConnections() }
