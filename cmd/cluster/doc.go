// Command cluster runs a simulated GPU cluster on an embedded NATS bus
// (cluster, or cluster run) and is a client of a running one: submit, get,
// list, cancel, explain, strategy, snapshot. See README.md for the flags.
//
// default.pgo is a CPU profile of `cluster simtest --seeds 1-40 --hours 24
// --cpuprofile default.pgo`, which go build uses to optimise this command
// (profile-guided optimisation; docs/PERFORMANCE.md).
package main
