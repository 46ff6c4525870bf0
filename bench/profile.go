package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"time"
)

// fetchProfile asks the collector's pprof extension at addr for a CPU
// profile of the next d (whole seconds, at least one: the endpoint's unit)
// and writes it to path. The profile covers a fixed span, not the run, so
// the caller sizes d from the runs it has measured.
func fetchProfile(ctx context.Context, addr string, d time.Duration, path string) <-chan error {
	done := make(chan error, 1)
	secs := max(1, int(math.Ceil(d.Seconds())))
	go func() {
		done <- func() error {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s answered %s", url, resp.Status)
			}
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, resp.Body); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}()
	}()
	return done
}
