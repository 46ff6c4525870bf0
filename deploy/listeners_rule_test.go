package deploy

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// The rule every shipped collector config keeps (docs/security.md, "What
// binds where"):
//
//   - A receiver that listens off loopback authenticates its senders: an
//     auth.authenticator that names an extension the config runs, or TLS
//     with client_ca_file (client certificates). With an authenticator it
//     also serves TLS (tls.cert_file): a bearer token on a plain connection
//     is readable by anyone on the path.
//   - Every other server — health, the collector's own Prometheus metrics,
//     pprof, zpages, the prime_status route — listens on loopback, or off
//     loopback only where a NetworkPolicy selects the pod and admits that
//     port from named peers only (the kubelet's probes come from the node,
//     which a NetworkPolicy always admits).
//
// Endpoints are read as the collector would: ${env:X} takes the workload's
// env when the config runs in a manifest, else its default; an unset
// variable with no default is empty, and an empty host listens on every
// interface.

// listenerKind tells the receivers, which take data, from the servers that
// only answer (health, metrics, pprof, status).
type listenerKind int

const (
	receiverListener listenerKind = iota
	controlListener
)

// listener is one address a collector config serves on.
type listener struct {
	where    string // the config path, e.g. receivers::otlp::protocols::grpc
	kind     listenerKind
	endpoint string // resolved host:port
	node     collectorConfig
}

// admission answers whether a NetworkPolicy keeps a port to named peers;
// nil where no policy applies (a config run as a file, an image).
type admission func(port int) (restricted bool, why string)

// Defaults of the components when their endpoint is left out: all loopback
// in collector v0.165 (localhost since v0.104).
const defaultEndpoint = "localhost:0"

// serverKeys are the extensions' keys that hold a server's endpoint, relative
// to the extension: healthcheckv2 has http and grpc, the others one.
var serverKeys = [][]string{{"endpoint"}, {"http", "endpoint"}, {"grpc", "endpoint"}}

// listeners lists the servers of a config with env applied.
func listeners(cfg collectorConfig, env map[string]string) []listener {
	var out []listener
	resolve := func(v any) string { return resolveEnv(fmt.Sprint(v), env) }
	recvs, _ := cfg.get("receivers")
	for _, id := range sortedKeys(recvs) {
		rcv := collectorConfig(asMap(asMap(recvs)[id]))
		if protos, ok := rcv.get("protocols"); ok {
			for _, p := range sortedKeys(protos) {
				node := collectorConfig(asMap(asMap(protos)[p]))
				ep, ok := node.get("endpoint")
				endpoint := defaultEndpoint
				if ok {
					endpoint = resolve(ep)
				}
				out = append(out, listener{where: "receivers::" + id + "::protocols::" + p, kind: receiverListener, endpoint: endpoint, node: node})
			}
			continue
		}
		if ep, ok := rcv.get("endpoint"); ok {
			out = append(out, listener{where: "receivers::" + id, kind: receiverListener, endpoint: resolve(ep), node: rcv})
		}
	}
	exts, _ := cfg.get("extensions")
	for _, id := range sortedKeys(exts) {
		ext := collectorConfig(asMap(asMap(exts)[id]))
		for _, keys := range serverKeys {
			// A URL is where the extension calls out (prime_auth's platform
			// API), not where it listens: servers take host:port.
			if ep, ok := ext.get(keys...); ok && !strings.Contains(fmt.Sprint(ep), "://") {
				// A server that authenticates its callers (confighttp's
				// auth: the multi-tenant gateway's status route behind
				// prime_auth) is held to a receiver's rule: its auth must
				// run and speak over TLS.
				kind := controlListener
				if _, authed := ext.get("auth", "authenticator"); authed {
					kind = receiverListener
				}
				out = append(out, listener{where: "extensions::" + id + "::" + strings.Join(keys, "::"), kind: kind, endpoint: resolve(ep), node: ext})
			}
		}
	}
	if readers, ok := cfg.get("service", "telemetry", "metrics", "readers"); ok {
		list, _ := readers.([]any)
		for i, r := range list {
			prom := collectorConfig(asMap(r))
			host, hok := prom.get("pull", "exporter", "prometheus", "host")
			port, pok := prom.get("pull", "exporter", "prometheus", "port")
			if !pok {
				continue
			}
			h := "localhost"
			if hok {
				h = resolve(host)
			}
			out = append(out, listener{where: fmt.Sprintf("service::telemetry::metrics::readers[%d]::pull::exporter::prometheus", i),
				kind: controlListener, endpoint: net.JoinHostPort(h, resolve(port))})
		}
	}
	return out
}

// violations are the listeners of cfg that break the rule, one sentence
// each naming the path and the fix.
func violations(cfg collectorConfig, env map[string]string, admits admission) []string {
	var out []string
	running := map[string]bool{}
	if exts, ok := cfg.get("service", "extensions"); ok {
		list, _ := exts.([]any)
		for _, e := range list {
			running[fmt.Sprint(e)] = true
		}
	}
	for _, l := range listeners(cfg, env) {
		host, portStr, err := net.SplitHostPort(l.endpoint)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: endpoint %q is not host:port", l.where, l.endpoint))
			continue
		}
		if loopback(host) {
			continue
		}
		switch l.kind {
		case receiverListener:
			authID, hasAuth := l.node.get("auth", "authenticator")
			_, clientCA := l.node.get("tls", "client_ca_file")
			_, cert := l.node.get("tls", "cert_file")
			switch {
			case !hasAuth && !clientCA:
				out = append(out, fmt.Sprintf("%s listens on %s without auth: give it auth: {authenticator: bearertokenauth/...} or tls: {client_ca_file: ...}, or bind it to loopback", l.where, l.endpoint))
			case hasAuth && !running[fmt.Sprint(authID)]:
				out = append(out, fmt.Sprintf("%s: its authenticator %v is not in service::extensions", l.where, authID))
			case hasAuth && !cert:
				out = append(out, fmt.Sprintf("%s listens on %s with a token but no TLS: give it tls: {cert_file, key_file}", l.where, l.endpoint))
			}
		case controlListener:
			port, _ := strconv.Atoi(portStr)
			if admits == nil {
				out = append(out, fmt.Sprintf("%s listens on %s with no NetworkPolicy around it: bind it to loopback (127.0.0.1)", l.where, l.endpoint))
				continue
			}
			if ok, why := admits(port); !ok {
				out = append(out, fmt.Sprintf("%s listens on %s, and %s", l.where, l.endpoint, why))
			}
		}
	}
	return out
}

// loopback reports whether host names only the loopback interface. An empty
// host, 0.0.0.0 and :: are every interface.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func sortedKeys(v any) []string {
	var keys []string
	for k := range asMap(v) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
