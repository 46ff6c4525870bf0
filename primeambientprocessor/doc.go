// Package primeambientprocessor is the prime_ambient processor: on a
// node's agent, it gives the node's ambient metrics (docs/system-metrics.md)
// the run identity that routes them, so that the agent's load_balancing
// exporter sends them to the gateway holding their run.
//
// The agent sees every trainer of its node: they send to it. So it learns,
// from each trainer's resource, which run each trainer pod sends for (its
// prime.run.key or prime.run.id, and its k8s.* pod attributes). A GPU's
// series (dcgm-exporter labels each with the pod holding it, and
// groupbyattrs moves the label onto the resource) then take the identity
// of their pod's run. The host's own metrics (no pod) belong to every run
// on the node, as W&B shows a shared host's load in each run: they are
// copied once per run that sent through this agent within node_run_ttl,
// each copy with that run's identity. Ambient data of a pod no trainer
// announced yet passes on unchanged: the gateway waits for its run, and
// counts it if none opens (ambient_no_run).
//
// One state per component ID, shared by the pipelines that name it: the
// trainers' data and the scrapes travel in different pipelines.
//
//go:generate go run -C ../internal/metadata/mdatagen . ../../../primeambientprocessor/metadata.yaml $GOPACKAGE
package primeambientprocessor
