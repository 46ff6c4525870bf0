// Package telemetry is the exporter's own counters and gauges: what it
// rejected, skipped, coerced and throttled, by reason and signal, what it
// posted and uploaded, and its runs. mdatagen builds the instruments
// (internal/metadata); Counters sets the attributes mdatagen documents but
// cannot bind to them.
//
// It is a leaf: it imports the generated instruments and the OTel metric
// API, nothing of the exporter's. The run registry (internal/runs) and the
// uploader (internal/upload) count into it through their own narrow
// interfaces, which Counters satisfies, so a count made on an episode's
// path goes down into this package and never back up into the component
// that called the path.
//
// On a multi-tenant gateway each tenant's Counters name the tenant on the
// rejection counter, bounded by Labels whatever the number of tenants.
package telemetry
