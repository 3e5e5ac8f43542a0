// Package replay reproduces the FGD paper's experiment on the openb trace:
// the protocol (Prepare: shuffle, tune to 1.3× capacity, node permutation,
// all from one seeded math/rand source), a run on the pure core (Offline)
// or through the live actors and the bus (Live), the per-pod measures
// (Mirror), the published curves' discretisation (Curve) and the
// comparison with the authors' results (ReadPublished, Compare). See
// docs/validation/fgd.md.
package replay
