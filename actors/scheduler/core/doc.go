// Package core owns the scheduler's deterministic core: the job queue,
// every job's state and history, a view of the cluster built from GPU and
// node events plus its own reservations, the answers to the public
// requests, and the placement protocol — reserve at the node actor and
// every GPU actor a placement touches, then commit; any refusal or timeout
// aborts the rest and the next candidate is tried — pipelined: the core
// never waits for an answer (negotiate.go). It is stepped by inputs
// (Step: a message, a timer, a journal outcome, each with the simulated
// and wall time) and returns what it asks of the world as data (Ready: the
// controls, events, answers and journal records, in order); it imports no NATS
// package, starts no goroutine and reads no clock. The decisions themselves
// (ranking, queue order, victims, holds, pending reasons) are the pure
// functions of package policy. Harness runs a core without a bus.
package core
