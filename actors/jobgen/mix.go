package jobgen

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// template is one kind of job in the mix, with its weight.
type template struct {
	name       string
	tenant     string
	priority   model.Priority
	vramGB     int
	util       float64
	duration   time.Duration
	checkpoint time.Duration
	weight     float64
}

// demoJobs are the reference demo's running jobs (DESIGN §9).
var demoJobs = []template{
	{"GPT-fine-tune", "nlp", model.PriorityHigh, 38, 82, 4 * time.Hour, 30 * time.Minute, 1},
	{"BERT-train", "nlp", model.PriorityHigh, 28, 65, 2 * time.Hour, 20 * time.Minute, 1},
	{"ResNet-eval", "vision", model.PriorityMedium, 20, 45, 30 * time.Minute, 10 * time.Minute, 1},
	{"XGB-sweep", "tabular", model.PriorityLow, 8, 20, time.Hour, 15 * time.Minute, 1},
	{"Stable-Diff", "vision", model.PriorityHigh, 34, 78, 6 * time.Hour, 30 * time.Minute, 1},
}

// evalWeight is the share of small 4–8GB evaluation jobs in the mix: half
// the arrivals, as in a cluster where many short evals surround a few
// long trainings.
const evalWeight = 0.5

// Mix draws jobs from the demo's templates and small evaluation jobs.
type Mix struct {
	rng *rand.Rand
	n   int
}

// NewMix returns the job mix for seed.
func NewMix(seed uint64) *Mix {
	// The second PCG word is a fixed stream constant, so a seed alone fixes the sequence.
	return &Mix{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
}

// DemoGPUs are the GPUs the reference demo shows its five jobs on, by
// template: a live cluster of the reference shape starts them there.
var DemoGPUs = map[string]string{"GPT-fine-tune": "gpu-0", "BERT-train": "gpu-1", "ResNet-eval": "gpu-2", "XGB-sweep": "gpu-3",
	"Stable-Diff": "gpu-6"}

// Demo returns the demo's five jobs, for a cluster that starts looking
// like the demo; pinned, each asks for the GPU the demo shows it on
// (DemoGPUs) through the job spec's "gpu", for its first placement only
// ("pin_once"), so the first screen is the demo's whatever the policy (the
// policy places everything after, these jobs too once they move).
func (m *Mix) Demo(pinned bool) []events.SubmitRequest {
	out := make([]events.SubmitRequest, len(demoJobs))
	for i, t := range demoJobs {
		out[i] = m.fromTemplate(t)
		if pinned {
			// The demo's picture is where they start: after that they go
			// where the policy puts them (pin_once).
			out[i].GPU, out[i].PinOnce = DemoGPUs[t.name], new(true)
		}
	}
	return out
}

// DemoFits reports whether every demo job fits the GPU the demo shows it
// on in a cluster whose GPUs have these VRAM sizes (by GPU id): the
// reference shape, or one that starts like it.
func DemoFits(vramOf map[string]model.Bytes) bool {
	for _, t := range demoJobs {
		if vramOf[DemoGPUs[t.name]] < model.Bytes(t.vramGB)*model.GB {
			return false
		}
	}
	return true
}

func (m *Mix) fromTemplate(t template) events.SubmitRequest {
	m.n++
	return events.SubmitRequest{Name: t.name + "-" + strconv.Itoa(m.n), Tenant: t.tenant, Priority: new(t.priority), GPUs: new(1),
		VRAM: events.SizeOf(model.Bytes(t.vramGB) * model.GB), Util: new(t.util), Duration: t.duration.String(),
		Checkpoint: t.checkpoint.String(), Preemptible: new(true)}
}

// Next draws the next job.
func (m *Mix) Next() events.SubmitRequest {
	if m.rng.Float64() < evalWeight {
		m.n++
		// Evaluation jobs: 4–8 GB, 10–35% util, 5–25 minutes, medium or low.
		vram := 4 + m.rng.IntN(5)
		util := float64(10 + 5*m.rng.IntN(6))
		dur := time.Duration(5+5*m.rng.IntN(5)) * time.Minute
		prio := model.PriorityMedium
		if m.rng.IntN(2) == 0 {
			prio = model.PriorityLow
		}
		return events.SubmitRequest{Name: "eval-" + strconv.Itoa(m.n), Tenant: "eval", Priority: new(prio), GPUs: new(1),
			VRAM: events.SizeOf(model.Bytes(vram) * model.GB), Util: new(util), Duration: dur.String(), Preemptible: new(true)}
	}
	return m.fromTemplate(demoJobs[m.rng.IntN(len(demoJobs))])
}

// Interarrival draws the simulated gap before the next job of a Poisson
// process with rate jobs per hour.
func (m *Mix) Interarrival(rate float64) time.Duration {
	return time.Duration(m.rng.ExpFloat64() / rate * float64(time.Hour))
}
