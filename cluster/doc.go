// Package cluster assembles a running gpusched cluster in one process: the
// embedded NATS server, a node host (node actor and GPU actors) per node,
// the scheduler actor and the job generator, and stops them cleanly. It is
// what cmd/cluster runs and what the end-to-end tests start on a random port.
package cluster
