package primestatusextension

import (
	"context"
	"encoding/json"
	"errors"

	"net/http"
	"net/url"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.uber.org/zap"
)

// statusExtension serves the status route from the sources registered
// with it, and from the gateways configured.
type statusExtension struct {
	cfg       *Config
	telemetry component.TelemetrySettings
	gateways  *gateways // set by Start; nil without gateways

	mu      sync.Mutex
	sources []*registration

	server *http.Server
	served chan struct{} // closed when Serve returns
}

// registration is one source, told apart from another registration of
// the same source (an exporter restarted by a reload).
type registration struct{ src Source }

func newStatusExtension(cfg *Config, telemetry component.TelemetrySettings) *statusExtension {
	return &statusExtension{cfg: cfg, telemetry: telemetry}
}

// RegisterRunStatusSource adds src to the sources the route asks, after
// those registered before it; unregister removes it.
func (x *statusExtension) RegisterRunStatusSource(src Source) (unregister func()) {
	reg := &registration{src: src}
	x.mu.Lock()
	x.sources = append(x.sources, reg)
	x.mu.Unlock()
	return func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		for i, r := range x.sources {
			if r == reg {
				x.sources = append(x.sources[:i:i], x.sources[i+1:]...)
				return
			}
		}
	}
}

// Start listens at once, so that a taken port fails the collector's
// start. The gateways' client is built here: its auth is an extension.
func (x *statusExtension) Start(ctx context.Context, host component.Host) error {
	if len(x.cfg.Gateways) > 0 {
		g, err := newGateways(ctx, x.cfg, host.GetExtensions(), x.telemetry)
		if err != nil {
			return err
		}
		x.gateways = g
	}
	ln, err := x.cfg.ToListener(ctx)
	if err != nil {
		return err
	}
	x.server, err = x.cfg.ToServer(ctx, host.GetExtensions(), x.telemetry, x.handler())
	if err != nil {
		_ = ln.Close()
		return err
	}
	scheme := "http://"
	if x.cfg.TLS.HasValue() {
		scheme = "https://"
	}
	x.telemetry.Logger.Info("Serving the run status route", zap.String("url", scheme+ln.Addr().String()+Path), zap.Strings("gateways", x.cfg.Gateways))
	x.served = make(chan struct{})
	go func() {
		defer close(x.served)
		if err := x.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	}()
	return nil
}

// Shutdown lets the requests in flight finish within ctx, then closes
// the server and the connections to the gateways.
func (x *statusExtension) Shutdown(ctx context.Context) error {
	if x.gateways != nil {
		defer x.gateways.close()
	}
	if x.server == nil {
		return nil
	}
	err := x.server.Shutdown(ctx)
	if err != nil {
		err = x.server.Close()
	}
	<-x.served
	return err
}

// handler routes the status route; anything else is a 404.
func (x *statusExtension) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Path, x.serveStatus)
	return mux
}

// serveStatus answers GET Path?kind=…&key=… (or id=…).
func (x *statusExtension) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, Status{Error: "method " + r.Method + " is not allowed: use GET"})
		return
	}
	values, err := url.ParseQuery(r.URL.RawQuery)
	var q Query
	if err == nil {
		q, err = parseQuery(values)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Status{Error: err.Error()})
		return
	}
	st := x.ask(r.Context(), q)
	if st.State == StateUnknown && x.gateways != nil {
		st, err = x.gateways.ask(r.Context(), q)
		if err != nil {
			writeJSON(w, http.StatusBadGateway, Status{State: StateUnavailable, Error: err.Error()})
			return
		}
	}
	if st.Kind == "" {
		st.Kind = q.Kind
	}
	writeJSON(w, http.StatusOK, st)
}

// ask asks the sources in turn: the first answer other than unknown wins.
func (x *statusExtension) ask(ctx context.Context, q Query) Status {
	x.mu.Lock()
	sources := make([]Source, len(x.sources))
	for i, r := range x.sources {
		sources[i] = r.src
	}
	x.mu.Unlock()
	for _, src := range sources {
		if st := src.RunStatus(ctx, q); st.State != "" && st.State != StateUnknown {
			return st
		}
	}
	return Status{State: StateUnknown}
}

func writeJSON(w http.ResponseWriter, code int, body Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}
