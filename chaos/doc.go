// Package chaos owns the chaos commands, <p>.chaos.<action>, by which a
// user breaks the cluster on purpose. This first part has one action,
// kill: a GPU actor crashes and restarts empty, and its jobs are lost and
// re-queued from their last checkpoints. The failure model (hang,
// partition, delay, drop, kill-scheduler, leases) comes with the chaos
// issue; see docs/ARCHITECTURE.md.
package chaos
