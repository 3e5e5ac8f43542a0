// Package jobgen owns the job generator actor: a seeded stream of jobs that
// looks like the reference demo's cluster (its five named jobs plus small
// evaluation jobs), arriving as a Poisson process at a rate given in jobs
// per simulated hour, submitted through the public <p>.job.submit subject
// exactly as any user would. The mix itself is a pure, seeded function.
package jobgen
