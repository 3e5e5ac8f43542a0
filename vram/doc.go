// Package vram models one GPU's memory as an address space. In the
// contiguous model (the live cluster's default) every allocation is an
// address range, so free memory split into holes can refuse a job although
// the total free would suffice: the refusal is "fragmented". In the pooled
// model (the FGD paper's) any free bytes serve. The package is pure: the GPU
// actor owns a Layout, and the scheduler uses the same functions to predict
// what a GPU will accept.
package vram
