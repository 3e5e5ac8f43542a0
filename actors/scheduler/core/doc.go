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
// functions of package policy. Core routes each input to parts that
// each decide one concern, made and connected by connect (parts.go):
// submissions (intake), placing jobs (placer), stops in flight (stops),
// state changes and their events (lifecycle), heartbeats and leases
// (liveness), a predecessor's work taken back (recovery), and the
// training and replayed rounds. Those work over small parts that each
// keep a piece of state and decide nothing: the calls in flight
// (callTracker), the step's effects (outbox), the waiting queue
// (waitQueue), the running jobs (runningJobs), the journal's owed writes
// (journalWrites), the totals, the tenants' allowances (tenantRates), the
// learned workload (jobClasses), the nodes' heartbeats (nodeRegistry), a
// restart's debts (restart), the stops awaiting a GPU's word
// (stopWaits) and the cluster's picture (view); docs/internals/scheduler.md
// lists them. What reads parts and decides nothing is a function of the
// parts it reads, not a method of Core. Config comes in sections
// (Policies, Workloads, Bounds, Clocks, Succession). Harness runs a core
// without a bus.
package core
