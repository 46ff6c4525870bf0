package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// telemetry reads the collector's own metrics from its Prometheus endpoint
// (collectorConfig serves them without unit or type suffixes).
type telemetry struct {
	url    string
	client *http.Client
}

// newTelemetry scrapes without compression: the collector measured would
// gzip every answer, and `debug`'s landed episodes are scraped every 10 ms
// (3 % of its collector's CPU went to gzip alone).
func newTelemetry(addr string) telemetry {
	return telemetry{url: "http://" + addr + "/metrics", client: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
}

// series is one scraped line: its name, its labels as written and value.
type series struct {
	name, labels string
	value        float64
}

func (t telemetry) scrape(ctx context.Context) ([]series, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("%s answered %s", t.url, resp.Status)
	}
	return parseSeries(resp.Body)
}

// parseSeries reads the Prometheus text format, keeping labels as written:
// the benchmark matches them, it does not interpret them.
func parseSeries(r io.Reader) ([]series, error) {
	var out []series
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var s series
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("metrics line %q", line)
			}
			s.name, s.labels, rest = line[:i], line[i+1:j], line[j+1:]
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("metrics line %q has no value", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// sum adds the values of name's series whose labels contain label (e.g.
// `exporter="debug"`; "" matches all).
func sum(ss []series, name, label string) float64 {
	total := 0.0
	for _, s := range ss {
		if s.name == name && strings.Contains(s.labels, label) {
			total += s.value
		}
	}
	return total
}
