package pollux

import (
	"math"
	"slices"
)

// goodputModel is a Pollux job's own estimate of its goodput (MODEL.md §8):
// its fitted throughput model and the gradient statistics it last
// measured (at its batch size and epoch then), over its application's
// batch limits.
type goodputModel struct {
	perf   PerfParams
	g2, s2 float64
	app    *App
}

// batchCandidates is how many global batch sizes Pollux tries per
// configuration, spaced geometrically from the least it may use to Bmax.
const batchCandidates = 50

// efficiency is the statistical efficiency of global batch b, relative to
// B0: gain/scale, gain 1 when its denominator is not positive.
func (m goodputModel) efficiency(b float64) float64 {
	scale := b / float64(m.app.B0)
	gain := 1.0
	if denom := m.s2/scale + m.g2; denom > 0 {
		gain = (m.s2 + m.g2) / denom
	}
	return gain / scale
}

// best is the most goodput (samples per second × efficiency) on n nodes
// and r replicas, with the configuration that gives it: the first best of
// batchCandidates global batch sizes from max(B0, min_local·r) to Bmax,
// each configured by the §4.2 rule (its R = 1 condition as local > B0 +
// 1e-8), those whose atomic batch leaves [min_local, max_local] counting
// 0. The cap of §4.2 step 5 is the caller's.
func (m goodputModel) best(n, r int) (float64, Config) {
	return m.bestOf(n, r, m.choices(r))
}

// batchChoice is one of best's candidate configurations for r replicas,
// with the parts of its goodput that do not depend on the nodes: the
// search asks best of many node counts for each replica count.
type batchChoice struct {
	cfg Config
	// fits says its atomic batch is within [min_local, max_local].
	fits bool
	// acc is T_acc, accPow T_acc^γ, samples r·a·(k+1), eff its
	// statistical efficiency.
	acc, accPow, samples, eff float64
}

// choices are best's candidates for r replicas, in its order.
func (m goodputModel) choices(r int) []batchChoice {
	app := m.app
	lo, hi := math.Max(float64(app.B0), float64(app.MinLocal*r)), float64(app.Bmax)
	out := make([]batchChoice, batchCandidates)
	for i := range out {
		b := geomspace(lo, hi, batchCandidates, i)
		local := b / float64(r)
		k := ceilEps(local/float64(app.MaxLocal)) - 1
		if r == 1 && local > float64(app.B0)+eps {
			k = max(k, 1)
		}
		a := ceilEps(local / float64(k+1))
		ch := batchChoice{cfg: Config{A: a, K: k}, fits: a >= app.MinLocal && a <= app.MaxLocal}
		if ch.fits {
			ch.acc = m.perf.accumTime(float64(a))
			ch.accPow = math.Pow(ch.acc, m.perf.Gamma)
			ch.samples = float64(r * a * (k + 1))
			ch.eff = m.efficiency(float64(r * a * (k + 1)))
		}
		out[i] = ch
	}
	return out
}

// bestOf is best over choices (r's): each fitting candidate's goodput is
// PerfParams.Throughput times its efficiency, the same operations in the
// same order, with T_net^γ raised once for all of them.
func (m goodputModel) bestOf(n, r int, choices []batchChoice) (float64, Config) {
	netPow := math.Pow(m.perf.networkTime(n, r), m.perf.Gamma)
	var top float64
	var c Config
	for i, ch := range choices {
		g := 0.0
		if ch.fits {
			opt := math.Exp(math.Log(ch.accPow+netPow) / m.perf.Gamma)
			g = ch.samples / (float64(ch.cfg.K)*ch.acc + opt) * ch.eff
		}
		if i == 0 || g > top {
			top, c = g, ch.cfg
		}
	}
	return top, c
}

// geomspace is the i-th of num values spaced geometrically from lo to hi,
// both included (numpy's geomspace).
func geomspace(lo, hi float64, num, i int) float64 {
	switch i {
	case 0:
		return lo
	case num - 1:
		return hi
	}
	return math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))*float64(i)/float64(num-1))
}

// elasticState is what a Pollux job keeps besides the common state: its
// profile (the step and sync time of every configuration it has run in,
// in the order it met them) and the model fitted to it, and the gradient
// statistics of its last step.
type elasticState struct {
	seen    map[[3]int]bool
	profile []observation
	perf    *PerfParams
	g2, s2  float64
	// speedups is the Pollux policy's memo of this job's speedups
	// (speedupOf).
	speedups *speedupMemo
	// fixed is the batch size of a job that keeps one (ncf's 32768).
	fixed int
}

// fixedBatchApp is the one application whose batch size Pollux does not
// choose (§8: ncf, 32768, at most one replica).
const fixedBatchApp = "ncf"

// configureElastic is a Pollux job's configuration on its placement: a
// fixed batch by the §4.2 rule; before any model, the batch
// max(B0, min_local·R) by the same rule; then the best of the model's
// candidates, capped as §4.2 caps.
func (j *Job) configureElastic() Config {
	app := j.app
	n, r := len(nonzero(j.Placement)), j.replicas()
	switch {
	case j.elastic.fixed > 0:
		return app.Configure(j.elastic.fixed, r)
	case j.elastic.perf == nil:
		return app.Configure(max(app.B0, app.MinLocal*r), r)
	}
	_, c := j.goodputModel().best(n, r)
	c.A = min(c.A, int(float64(app.Bmax)/float64(r*(c.K+1))))
	return c
}

// goodputModel is the job's current estimate (its model must exist).
func (j *Job) goodputModel() goodputModel {
	return goodputModel{perf: *j.elastic.perf, g2: j.elastic.g2, s2: j.elastic.s2, app: j.app}
}

// observe records what the step about to run measures (§8): the true
// gradient statistics of its batch and epoch always, its step and sync
// time the first time the job meets this (nodes, replicas, atomic batch),
// refitting the model then.
func (j *Job) observe(st Step) error {
	beff := j.replicas() * j.Config.A * (j.Config.K + 1)
	g2, s2, err := j.app.GradStats(beff, j.Epoch)
	if err != nil {
		return err
	}
	j.elastic.g2, j.elastic.s2 = g2, s2
	key := [3]int{len(nonzero(j.Placement)), j.replicas(), j.Config.A}
	if j.elastic.seen[key] {
		return nil
	}
	j.elastic.seen[key] = true
	j.elastic.profile = append(j.elastic.profile, observation{nodes: key[0], replicas: key[1], local: key[2], step: st.Step, sync: st.Sync})
	perf := FitPerf(j.elastic.profile)
	j.elastic.perf = &perf
	return nil
}

// maxProfiledReplicas is the most replicas the job has been measured on.
func (j *Job) maxProfiledReplicas() int {
	most := 0
	for _, o := range j.elastic.profile {
		most = max(most, o.replicas)
	}
	return most
}

// nonzero is a placement without its empty nodes.
func nonzero(p []int) []int {
	return slices.DeleteFunc(slices.Clone(p), func(n int) bool { return n == 0 })
}
