// Package e2e runs the built collector (ocb, with the prime exporter) and
// the demo trainer (the real OTel Go SDK) as processes, against the fake
// platform of rft/rfttest and the offline directory, and checks what landed.
//
// It is its own module so that `go test ./...` in the component does not need
// the binaries; scripts/test.sh builds them and passes their paths in
// PRIME_OTELCOL and PRIME_DEMOTRAINER.
//
// The tests' own collector configs are rendered from a few templates in
// testdata/configs by collectorConfig (configs_test.go), each with the
// parameters its test sets; the shipped configs of deploy/ run as they are.
//
// Files behind the build tag soak are not compiled in CI: the soak
// (scripts/soak.sh — many concurrent runs through the collector on the
// production config while a probe samples its RSS and goroutines through
// /proc and the pprof extension) and the SIGTERM-during-an-outage test, each
// of which takes minutes. Their sizes come from PRIME_SOAK_* variables.
// The build tag outage holds the ten-minute platform outage
// (scripts/outage.sh); CI runs the same scenario for 5 m 45 s, so the e2e
// run takes more than go test's default timeout of 10 minutes, and
// scripts/test.sh gives it 30. The build tag chaos holds the chaos tests
// that CI leaves out (scripts/chaos.sh): kill -9 during finalize_grace and
// while the finalize is in flight, and of a gateway while its agent replays
// a backlog; the repeated-kill chaos test (chaos_test.go) runs in CI.
// The build tag upgradefixtures regenerates testdata/upgrade/. The build
// tag comparescale holds the compare page's scale measurement
// (scripts/compare-scale.sh): 20 runs of 10,000 steps and 500 metrics, 2.3
// GB written and read, over a minute. The build
// tag image holds the container image's test (scripts/image.sh --test): the
// gateway image run with podman, which the other tests do not need.
package e2e
