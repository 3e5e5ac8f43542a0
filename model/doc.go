// Package model owns the domain vocabulary shared by every part of gpusched:
// byte sizes (SI and IEC, parsed strictly), job priorities, the GPU model
// catalog with its cited figures, cluster shapes (nodes and their GPUs) and
// the job specification with its validation. It has no goroutines, no bus
// and no clock: every function here is pure.
package model
