// Command cluster runs a simulated GPU cluster on an embedded NATS bus
// (cluster, or cluster run) and is a client of a running one: submit, get,
// list, cancel, explain, strategy, snapshot. See README.md for the flags.
package main
