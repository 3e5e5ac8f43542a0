package gavel

import (
	"github.com/gpusched/gpusched/internal/crmath"
	"github.com/gpusched/gpusched/internal/pyrand"
)

// Job is one generated job (§2).
type Job struct {
	// ID numbers jobs in arrival order from 0.
	ID int
	// Arrival is the job's submit time in seconds from the run's start.
	Arrival float64
	// Template indexes Data.Templates.
	Template int
	// Type is the template's name.
	Type string
	// Scale is how many GPUs of one type the job runs on.
	Scale int
	// Duration is the drawn duration in seconds on V100s.
	Duration float64
	// TotalSteps is the job's work: Duration × its V100 rate (not rounded).
	TotalSteps float64
}

// Generator draws the reference's jobs and arrivals: the job generator
// seeded S+2 and the inter-arrival generator seeded S+3 (§0), private to
// it, so job i is the same whatever the policy.
type Generator struct {
	data     *Data
	jobs     *pyrand.Rand
	arrivals *pyrand.Rand
	multiGPU bool
	lam      float64
	next     int
	arrival  float64
}

// NewGenerator draws jobs for seed S: multiGPU allows scale factors above
// 1; lam is the mean inter-arrival time in seconds (0: every job arrives
// at 0, the static trace).
func NewGenerator(data *Data, seed uint64, lam float64, multiGPU bool) *Generator {
	return &Generator{data: data, jobs: pyrand.New(seed + 2), arrivals: pyrand.New(seed + 3), multiGPU: multiGPU, lam: lam}
}

// NextArrival is when the next job arrives.
func (g *Generator) NextArrival() float64 { return g.arrival }

// Next draws the next job, arriving at NextArrival, and the arrival after
// it.
func (g *Generator) Next() Job {
	r := g.jobs
	// The scale factor's thresholds are the reference's (70 % one GPU, 10 %
	// two, 15 % four, 5 % eight); drawn even when it is then overwritten.
	u := r.Uniform(0, 1)
	scale := 1
	switch {
	case 0.7 <= u && u <= 0.8:
		scale = 2
	case 0.8 <= u && u <= 0.95:
		scale = 4
	case u >= 0.95:
		scale = 8
	}
	if !g.multiGPU {
		scale = 1
	}
	// 20 % of jobs last 10^3–10^4 minutes, the rest 10^1.5–10^3 minutes.
	var duration float64
	if r.Random() >= 0.8 {
		// The C library's pow, which Go's math.Pow misses by an ulp or
		// more for 40 % of these draws (package crmath).
		duration = 60 * crmath.Pow10(r.Uniform(3, 4))
	} else {
		duration = 60 * crmath.Pow10(r.Uniform(1.5, 3))
	}
	tmpl := r.RandBelow(len(g.data.Templates))
	for scale != 1 && !g.data.Templates[tmpl].Distributed {
		tmpl = r.RandBelow(len(g.data.Templates))
	}
	job := Job{
		ID: g.next, Arrival: g.arrival, Template: tmpl, Type: g.data.Templates[tmpl].Name, Scale: scale,
		Duration: duration, TotalSteps: duration * g.data.alone[V100][tmpl][scaleIndex(scale)],
	}
	g.next++
	if g.lam != 0 {
		// The reference divides by the rate rather than multiplying by lam.
		g.arrival = -crmath.Log(1.0-g.arrivals.Random())/(1.0/g.lam) + g.arrival
	}
	return job
}
