package e2e

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// promSeries is one scraped series: its name, labels and value.
type promSeries struct {
	name   string
	labels map[string]string
	value  float64
}

// counters is a scrape of the collector's own metrics.
type counters []promSeries

// sum adds the series of name whose labels include every k=v pair given
// ("reason", "no_step", "signal", "metrics"); a series never recorded counts
// as 0, as the collector only exports series that were added to.
func (cs counters) sum(name string, kv ...string) float64 {
	total := 0.0
next:
	for _, s := range cs {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if s.labels[kv[i]] != kv[i+1] {
				continue next
			}
		}
		total += s.value
	}
	return total
}

// byReason lists name's series as reason/signal → value, for failure messages.
func (cs counters) byReason(name string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range cs {
		if s.name == name {
			out[s.labels["signal"]+"/"+s.labels["reason"]] += s.value
		}
	}
	return out
}

// scrapeCounters reads the collector's own metrics from 127.0.0.1:port.
func scrapeCounters(t *testing.T, c *collector, port string) counters {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://127.0.0.1:" + port + "/metrics")
	if err != nil {
		fatalf(t, c, "scraping the collector's own metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		fatalf(t, c, "scraping the collector's own metrics: %d %v\n%s", resp.StatusCode, err, body)
	}
	var out counters
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, ok := parsePromLine(line)
		if !ok {
			fatalf(t, c, "cannot read the metrics line %q", line)
		}
		out = append(out, s)
	}
	return out
}

// parsePromLine reads `name{k="v",...} value [timestamp]`.
func parsePromLine(line string) (promSeries, bool) {
	s := promSeries{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, false
	}
	s.name, line = line[:i], line[i:]
	if strings.HasPrefix(line, "{") {
		line = line[1:]
		for !strings.HasPrefix(line, "}") {
			eq := strings.Index(line, `="`)
			if eq < 0 {
				return s, false
			}
			key := strings.TrimPrefix(line[:eq], ",")
			line = line[eq+2:]
			var val strings.Builder
			for {
				if line == "" {
					return s, false
				}
				ch := line[0]
				line = line[1:]
				if ch == '"' {
					break
				}
				if ch == '\\' && line != "" {
					switch line[0] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(line[0])
					}
					line = line[1:]
					continue
				}
				val.WriteByte(ch)
			}
			s.labels[key] = val.String()
			line = strings.TrimPrefix(line, ",")
		}
		line = line[1:]
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}
