// Package chaos owns the chaos commands, <p>.chaos.<action>, by which a
// user breaks the cluster on purpose, and the monkey that sends them at
// random (seeded): kill a GPU actor (its supervisor restarts it empty
// after a backoff; its jobs are lost and re-queued from their last
// checkpoints), hang it or cut it off from the bus for a while (the
// scheduler declares it dead when its lease runs out; it stops its own
// jobs first), delay or drop a fraction of its messages, or kill the
// scheduler (it restarts and re-learns what runs from the GPU actors; its
// queue is lost until the queue is durable). Every action is recorded as
// an event, <p>.evt.chaos.<action>, so a checker can time detection and
// expect the gaps a drop makes. See docs/CHAOS.md.
package chaos
