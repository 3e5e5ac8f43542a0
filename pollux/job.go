package pollux

import (
	"fmt"
	"math"
	"slices"
)

// RestartDelay is the time a job computes nothing after every non-empty
// reallocation, its first placement included (§4.3).
const RestartDelay = 30

// Spec is one row of a workload CSV.
type Spec struct {
	Name   string
	Submit int
	App    string
	// Replicas and Batch are the TunedJobs settings (Tiresias reads both,
	// Optimus only the batch size).
	Replicas, Batch int
}

// Job is a job's state as the simulator advances it (§4.1).
type Job struct {
	Spec
	app *App
	// Clock is the job's own time (the cluster's after each step).
	Clock int
	// Rescale is the restart delay still to serve, in seconds.
	Rescale   int
	Placement []int
	Config    Config
	Progress  float64
	Epoch     int
	// Done is set with Completion, the second it completed.
	Done       bool
	Completion int
	// Service is the GPU-seconds it attained, restart delays included.
	Service int
	// Restarts is -1 until its first placement, then counts the later
	// non-empty reallocations.
	Restarts int
	// FirstAlloc is the second of its first placement (-1 until then);
	// Preemptions counts the times its GPUs were taken away before it
	// completed; RestartGPUSeconds the GPU-seconds its restart delays held
	// without progress.
	FirstAlloc, Preemptions, RestartGPUSeconds int
	// elastic is a Pollux job's state (nil under TunedJobs).
	elastic *elasticState
	// Approximate counts the steps it advanced at an interpolated step
	// time (a shape outside MODEL.md's Appendix B): its JCT is then not
	// the reference's to the second.
	Approximate int
}

// NewJob is a job of spec on its application's model.
func (m *Model) NewJob(s Spec) (*Job, error) {
	app := m.Apps[s.App]
	if app == nil {
		return nil, fmt.Errorf("job %s: unknown application %q", s.Name, s.App)
	}
	if s.Batch < app.B0 || s.Batch > app.Bmax {
		return nil, fmt.Errorf("job %s: batch size %d outside %s's %d..%d", s.Name, s.Batch, s.App, app.B0, app.Bmax)
	}
	return &Job{Spec: s, app: app, Restarts: -1, FirstAlloc: -1}, nil
}

// NewElasticJob is a job of spec as Pollux runs it (§8): no target batch
// size or replica count (the policy and the job choose them), except
// ncf's fixed batch of 32768.
func (m *Model) NewElasticJob(s Spec) (*Job, error) {
	j, err := m.NewJob(s)
	if err != nil {
		return nil, err
	}
	j.elastic = &elasticState{seen: map[[3]int]bool{}}
	if s.App == fixedBatchApp {
		j.elastic.fixed = min(32768, j.app.Bmax)
	}
	return j, nil
}

// JCT is its completion time less its submission time.
func (j *Job) JCT() int { return j.Completion - j.Submit }

// replicas is the placement's replica count.
func (j *Job) replicas() int {
	r := 0
	for _, n := range j.Placement {
		r += n
	}
	return r
}

// Reallocate gives the job a new placement (§4.3): a non-empty one
// configures it and charges the restart delay; an empty one (preemption)
// keeps its progress, epoch and any delay still to serve.
func (j *Job) Reallocate(placement []int) {
	if len(placement) == 0 {
		if len(j.Placement) > 0 && !j.Done {
			j.Preemptions++
		}
		j.Placement, j.Config.A = nil, 0
		return
	}
	if j.FirstAlloc < 0 {
		j.FirstAlloc = j.Clock
	}
	j.Placement = slices.Clone(placement)
	if j.elastic != nil {
		j.Config = j.configureElastic()
	} else {
		j.Config = j.app.Configure(j.Batch, j.replicas())
	}
	j.Rescale = RestartDelay
	j.Restarts++
}

// Advance runs the job for s seconds (§4.5): the restart delay first,
// then progress at its goodput epoch by epoch, completing inside the
// interval at the rounded second its last epoch ends.
func (j *Job) Advance(s int) error {
	if len(j.Placement) == 0 {
		j.Clock += s
		return nil
	}
	r := j.replicas()
	d := min(j.Rescale, s)
	j.Clock += d
	j.Service += d * r
	j.RestartGPUSeconds += d * r
	j.Rescale -= d
	s -= d
	for s > 0 && !j.Done {
		st, exact, err := j.app.Throughput(j.Placement, j.Config.A)
		if err != nil {
			return fmt.Errorf("job %s: %w", j.Name, err)
		}
		if j.elastic != nil {
			if err := j.observe(st); err != nil {
				return fmt.Errorf("job %s: %w", j.Name, err)
			}
		}
		gp, err := j.app.goodputAt(st, j.Placement, j.Config, j.Epoch)
		if err != nil {
			return fmt.Errorf("job %s: %w", j.Name, err)
		}
		if !exact {
			j.Approximate++
		}
		next := j.app.Bound(j.Epoch + 1)
		if gained := float64(gp * float64(s)); j.Progress+gained < next {
			j.Progress += gained
			j.Clock += s
			j.Service += s * r
			s = 0
			j.rescale()
			break
		}
		j.Epoch++
		delta := int(math.RoundToEven((next - j.Progress) / gp))
		if j.Epoch > j.app.MaxEpochs-1 {
			j.Done, j.Completion = true, j.Clock+delta
		}
		j.Progress = next
		j.Clock += delta
		j.Service += delta * r
		s -= delta
		j.rescale()
	}
	j.Clock += s
	return nil
}

// rescale re-applies the configuration rule after a step (§4.5 step 3.5):
// a no-op for TunedJobs; a Pollux job re-chooses its batch size.
func (j *Job) rescale() {
	if j.elastic != nil {
		j.Config = j.configureElastic()
	}
}

// placementOf is the placement an allocation list makes: each run of
// equal consecutive node indices is one node's replica count.
func placementOf(nodes []int) []int {
	var p []int
	for i, n := range nodes {
		if i > 0 && n == nodes[i-1] {
			p[len(p)-1]++
			continue
		}
		p = append(p, 1)
	}
	return p
}

// CheckReplicas says whether a TunedJobs job of spec s can run on the
// replicas it asks for: its batch size configured on them (Configure)
// must be a local batch some placement of its application was measured
// at (MinLocal..MaxLocal). Tiresias runs every job on exactly its
// replicas, so a job that fails this would be refused by its GPUs at
// every round, for ever; nil when it may run.
func (m *Model) CheckReplicas(s Spec) error {
	app := m.Apps[s.App]
	if app == nil || s.Replicas <= 0 {
		return nil // NewJob and the submission's own checks say so
	}
	c := app.Configure(s.Batch, s.Replicas)
	if c.A >= app.MinLocal && c.A <= app.MaxLocal {
		return nil
	}
	lo, hi := app.MinLocal*s.Replicas, app.MaxLocal*s.Replicas
	return fmt.Errorf("%s at batch size %d on %d replicas has a local batch of %d, outside the %d..%d its placements were measured at (on %d replicas: a batch size of %d..%d)",
		s.App, s.Batch, s.Replicas, c.A, app.MinLocal, app.MaxLocal, s.Replicas, lo, hi)
}
