// Package model owns the domain vocabulary shared by every part of gpusched:
// byte sizes (SI and IEC, parsed strictly), job priorities, the GPU model
// catalog with its cited figures, cluster shapes (nodes and their GPUs),
// the arithmetic of a job's work (checkpoints, CPU in thousandths) and the
// error that names a request's field at fault (FieldError). The job
// specification itself is a wire shape: events.Job. It has no goroutines, no bus
// and no clock: every function here is pure.
package model
