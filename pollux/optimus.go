package pollux

import (
	"fmt"
	"slices"
)

// Optimus is Optimus+Oracle+TunedJobs (§7): replicas handed out one at a
// time to the job whose predicted remaining time drops most, then placed
// small jobs first by the most-free-node rule; a job keeps its GPUs only
// while its count is unchanged.
type Optimus struct {
	// tau memoises the predicted step time by (application, batch, n).
	tau map[tauKey]float64
}

type tauKey struct {
	app      string
	batch, n int
}

// NewOptimus is the policy before its first call.
func NewOptimus() *Optimus { return &Optimus{tau: map[tauKey]float64{}} }

// Name is "optimus".
func (*Optimus) Name() string { return "optimus" }

// packedGPUs is the GPUs per node of the predictor's packed placement:
// always 4, whatever the cluster's (§7, §9.18).
const packedGPUs = 4

// stepTime is τ_j(n): the predicted time per step of a job of batch b on
// n replicas packed four to a node, with no statistical efficiency.
func (p *Optimus) stepTime(app *App, b, n int) (float64, error) {
	key := tauKey{app.Name, b, n}
	if v, ok := p.tau[key]; ok {
		return v, nil
	}
	var packed []int
	for sum := 0; sum < n; sum += packed[len(packed)-1] {
		packed = append(packed, min(n-sum, packedGPUs))
	}
	local := ceilEps(float64(b) / float64(n))
	k := ceilEps(float64(local)/float64(app.MaxLocal)) - 1
	if n == 1 {
		k = max(1, k) // unconditionally, unlike §4.2
	}
	a := ceilEps(float64(local) / float64(k+1))
	a = min(a, int(float64(app.Bmax)/float64(n*(k+1))))
	// A prediction from an interpolated step time is not counted: the
	// jobs that then run on such a shape are (Job.Approximate).
	st, _, err := app.Throughput(packed, a)
	if err != nil {
		return 0, err
	}
	v := st.Step + float64((st.Step-st.Sync)*float64(k))
	p.tau[key] = v
	return v, nil
}

// maxReplicas is b // min_local, except ncf's 1.
func maxReplicas(j *Job) int {
	if j.App == "ncf" {
		return 1
	}
	return j.Batch / j.app.MinLocal
}

// remaining is the oracle's remaining work: the iterations of epochs
// e+1 … max_epochs−1 at the job's batch (1 in its last epoch).
func remaining(j *Job) (float64, error) {
	last := j.app.MaxEpochs - 1
	if last <= j.Epoch {
		return 1, nil
	}
	end, err := j.app.interp(j.Batch, last, iterationCol)
	if err != nil {
		return 0, err
	}
	now, err := j.app.interp(j.Batch, j.Epoch, iterationCol)
	if err != nil {
		return 0, err
	}
	return end - now, nil
}

// Allocate is one call of §7.
func (p *Optimus) Allocate(t int, active []*Job, c Cluster, current Alloc) (Alloc, error) {
	free := c.TotalGPUs()
	n := make([]int, len(active))
	gain := make([]float64, len(active))
	rem := make([]float64, len(active))
	// marginal is the drop in predicted remaining time from one more replica.
	marginal := func(i int) (float64, error) {
		j := active[i]
		a, err := p.stepTime(j.app, j.Batch, n[i])
		if err != nil {
			return 0, err
		}
		b, err := p.stepTime(j.app, j.Batch, n[i]+1)
		if err != nil {
			return 0, err
		}
		return float64((a - b) * rem[i]), nil
	}
	// Phase 1: one replica each, in workload order, while any is free.
	for i, j := range active {
		r, err := remaining(j)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", j.Name, err)
		}
		rem[i] = r
		if free < 1 {
			continue
		}
		n[i] = 1
		free--
		if 2 > maxReplicas(j) || free < 1 {
			continue
		}
		if gain[i], err = marginal(i); err != nil {
			return nil, fmt.Errorf("job %s: %w", j.Name, err)
		}
	}
	// Phase 2: the rest one at a time to the largest gain (the earliest
	// job on a tie), until none gains.
	for free > 0 {
		best := -1
		for i := range active {
			if gain[i] > 0 && (best < 0 || gain[i] > gain[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		n[best]++
		gain[best] = 0
		if n[best]+1 <= maxReplicas(active[best]) {
			g, err := marginal(best)
			if err != nil {
				return nil, fmt.Errorf("job %s: %w", active[best].Name, err)
			}
			gain[best] = g
		}
		free--
	}
	// Phase 3: keep a list whose length is unchanged; place the others,
	// the fewest replicas first.
	w := Alloc{}
	for i, j := range active {
		if nodes, ok := current[j.Name]; ok && len(nodes) == n[i] {
			w[j.Name] = nodes
		}
	}
	table := newFreeTable(c, w)
	order := make([]int, len(active))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return n[a] - n[b] })
	for _, i := range order {
		if _, kept := w[active[i].Name]; n[i] > 0 && !kept {
			w[active[i].Name] = table.take(n[i])
		}
	}
	return w, nil
}
