// Package scheduler owns the scheduler actor's shell: its subscriptions
// (the public request subjects, GPU and node events, its own inbox), one
// mailbox, the caller's tenant read from what the NATS server vouches for,
// the timers, and carrying out what the core sends — controls, events and
// answers over its connection, job records through the journal. The
// scheduler's state and rules are package core's, a deterministic state
// machine this shell steps one input at a time.
package scheduler
