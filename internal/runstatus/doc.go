// Package runstatus makes the exporter a source of the prime_status
// extension's run status route: a Source is registered with every such
// extension the collector has at start, and removed at the last shutdown.
//
// It answers from the run registry serving now, and acquires nothing, as
// the route promises: a query never creates, holds or acquires a run. A
// run is found with its dashboard online, or its directory offline
// (absolute, since a trainer may run in another working directory), as the
// exporter's log lines give them. Before start, after shutdown and on a
// multi-tenant gateway, whose runs are each tenant's, no registry serves
// and every run is unknown; a disabled exporter says so for every run.
package runstatus
