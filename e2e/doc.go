// Package e2e runs the built collector (ocb, with the prime exporter) and
// the demo trainer (the real OTel Go SDK) as processes, against the fake
// platform of rft/rfttest and the offline directory, and checks what landed.
//
// It is its own module so that `go test ./...` in the component does not need
// the binaries; scripts/test.sh builds them and passes their paths in
// PRIME_OTELCOL and PRIME_DEMOTRAINER.
package e2e
