package pollux

import (
	"encoding/binary"
	"math"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"gonum.org/v1/gonum/optimize"
)

// PerfParams is Pollux's 7-parameter throughput model of a job (MODEL.md
// §8): the time of one micro-batch T_acc(a) = αc + βc·a, the network time
// of a step T_net(n, r) (inter-node when n > 1, else intra-node when
// r > 1: α + β·max(r−2, 1e-8)), and the optimizer step's time
// T_opt = (T_acc^γ + T_net^γ)^(1/γ), γ ∈ [1, 10] saying how much of the
// synchronisation overlaps the computation.
type PerfParams struct {
	AlphaC, BetaC, AlphaN, BetaN, AlphaR, BetaR, Gamma float64
}

// tiny is the 1e-8 of the model's formulas: the lower bound of every α
// and β, the network time of one replica, and the least (r−2).
const tiny = 1e-8

// accumTime is T_acc(a).
func (p PerfParams) accumTime(a float64) float64 { return p.AlphaC + p.BetaC*a }

// networkTime is T_net(n, r).
func (p PerfParams) networkTime(n, r int) float64 {
	retro := math.Max(float64(r-2), tiny)
	switch {
	case n > 1:
		return p.AlphaN + p.BetaN*retro
	case r > 1:
		return p.AlphaR + p.BetaR*retro
	}
	return tiny * (1 + retro)
}

// logOptimTime is log T_opt.
func (p PerfParams) logOptimTime(acc, net float64) float64 {
	return math.Log(math.Pow(acc, p.Gamma)+math.Pow(net, p.Gamma)) / p.Gamma
}

// Throughput is samples per second of (n nodes, r replicas, atomic batch
// a, k accumulation steps): r·a·(k+1) / (k·T_acc + T_opt).
func (p PerfParams) Throughput(n, r, a, k int) float64 {
	acc := p.accumTime(float64(a))
	opt := math.Exp(p.logOptimTime(acc, p.networkTime(n, r)))
	return float64(r*a*(k+1)) / (float64(k)*acc + opt)
}

// observation is one configuration a job has run in, with the step and
// sync times it measured there (the profile of §8).
type observation struct {
	nodes, replicas, local int
	step, sync             float64
}

// perfStart is the fit's starting point (§8): 0.1 for each α, 0.01 for
// each β, γ = 1.001.
var perfStart = [7]float64{0.1, 0.01, 0.1, 0.01, 0.1, 0.01, 1.001}

// FitPerf fits the model to a job's observations (§8): least root mean
// square error of log T_acc against log(step − sync) plus that of log
// T_opt against log step, plus 1e-3·(γ−1)² (a small γ is easier to fit)
// and 1e-2·((βn/αn)² + (βr/αr)²) (prefer the optimistic model). A
// parameter the observations cannot tell is held at its lower bound 1e-8
// (the optimistic model: no network cost it has not seen): αn, βn when no
// observation spans nodes; αr, βr when none has several replicas on one
// node; βn, βr when none has more than two replicas; αc is held at half
// the mean T_acc when one atomic batch size was seen. With no multi-node
// observation, αn and βn are then raised to 1.1 × αr, βr.
//
// The reference minimises with scipy's bounded L-BFGS-B from autograd's
// gradient; here gonum's L-BFGS runs on the bounded parameters mapped to
// free ones (α, β = 1e-8 + eˣ; γ = 1 + 9·sigmoid(x)) with the gradient
// worked out by hand (perfFit.gradient): the same objective, not the same
// iterates, so the fitted values can differ where the objective is flat
// (one reason Pollux is reproduced only on average).
//
// A profile fitted lately is answered from a memo (fits), the same bits.
func FitPerf(obs []observation) PerfParams {
	return fits.fit(obs)
}

// fitPerf is FitPerf's work, without the memo.
func fitPerf(obs []observation) PerfParams {
	f := &perfFit{obs: obs, start: perfStart}
	locals := map[int]bool{}
	var accSum float64
	multiNode, singleNodeMulti, over2 := false, false, false
	for _, o := range obs {
		locals[o.local] = true
		accSum += o.step - o.sync
		multiNode = multiNode || o.nodes > 1
		singleNodeMulti = singleNodeMulti || (o.nodes == 1 && o.replicas > 1)
		over2 = over2 || o.replicas > 2
		f.logAcc = append(f.logAcc, math.Log(o.step-o.sync))
		f.logStep = append(f.logStep, math.Log(o.step))
	}
	fixed := [7]bool{}
	if len(locals) == 1 {
		f.start[0], fixed[0] = accSum/float64(len(obs))/2, true
	}
	hold := func(i int) { f.start[i], fixed[i] = tiny, true }
	if !multiNode {
		hold(2)
		hold(3)
	}
	if !singleNodeMulti {
		hold(4)
		hold(5)
	}
	if !over2 {
		hold(3)
		hold(5)
	}
	for i := range fixed {
		if !fixed[i] {
			f.free = append(f.free, i)
		}
	}
	x0 := make([]float64, len(f.free))
	for j, i := range f.free {
		if i == gammaParam {
			g := (f.start[i] - 1) / 9
			x0[j] = math.Log(g / (1 - g))
		} else {
			x0[j] = math.Log(f.start[i] - tiny)
		}
	}
	best := f.params(x0)
	if len(f.free) > 0 {
		problem := optimize.Problem{Func: f.value, Grad: f.gradient}
		res, err := optimize.Minimize(problem, x0, &optimize.Settings{GradientThreshold: 1e-8, MajorIterations: 500}, &optimize.LBFGS{})
		if res != nil && (err == nil || res.F < f.value(x0)) && !math.IsNaN(res.F) {
			best = f.params(res.X)
		}
	}
	if !multiNode {
		best.AlphaN = math.Max(best.AlphaN, 1.1*best.AlphaR)
		best.BetaN = math.Max(best.BetaN, 1.1*best.BetaR)
	}
	return best
}

// gammaParam is γ's index among the seven.
const gammaParam = 6

// perfFit is one fit: the observations with their targets' logarithms,
// the parameters held (start) and the free ones' indices.
type perfFit struct {
	obs             []observation
	logAcc, logStep []float64
	start           [7]float64
	free            []int
}

// params maps free variables to the model's parameters.
func (f *perfFit) params(x []float64) PerfParams {
	v := f.start
	for j, i := range f.free {
		if i == gammaParam {
			v[i] = 1 + 9/(1+math.Exp(-x[j]))
		} else {
			v[i] = tiny + math.Exp(x[j])
		}
	}
	return PerfParams{v[0], v[1], v[2], v[3], v[4], v[5], v[6]}
}

// value is the objective at x.
func (f *perfFit) value(x []float64) float64 {
	v, _ := f.evaluate(x, false)
	return v
}

// gradient is the objective's gradient at x.
func (f *perfFit) gradient(grad, x []float64) {
	_, g := f.evaluate(x, true)
	for j, i := range f.free {
		grad[j] = g[i]
	}
}

// evaluate is the objective at x and, when asked, its gradient by the
// seven parameters times each free variable's derivative (eˣ for α, β;
// (γ−1)(10−γ)/9 for γ).
func (f *perfFit) evaluate(x []float64, withGrad bool) (float64, [7]float64) {
	p := f.params(x)
	n := float64(len(f.obs))
	var e1, e2 float64
	var g1, g2 [7]float64
	for i, o := range f.obs {
		acc := p.accumTime(float64(o.local))
		net := p.networkTime(o.nodes, o.replicas)
		pa, pn := math.Pow(acc, p.Gamma), math.Pow(net, p.Gamma)
		sum := pa + pn
		logOpt := math.Log(sum) / p.Gamma
		d1 := math.Log(acc) - f.logAcc[i]
		d2 := logOpt - f.logStep[i]
		e1 += d1 * d1
		e2 += d2 * d2
		if !withGrad {
			continue
		}
		// d log(acc)/d αc = 1/acc, / d βc = a/acc.
		g1[0] += d1 / acc
		g1[1] += d1 * float64(o.local) / acc
		// log T_opt = log(acc^γ + net^γ)/γ: by acc, acc^(γ−1)/sum; by
		// net, net^(γ−1)/sum; by γ, −log(sum)/γ² + (acc^γ·log acc +
		// net^γ·log net)/(γ·sum).
		byAcc, byNet := pa/acc/sum, pn/net/sum
		g2[0] += d2 * byAcc
		g2[1] += d2 * byAcc * float64(o.local)
		retro := math.Max(float64(o.replicas-2), tiny)
		switch {
		case o.nodes > 1:
			g2[2] += d2 * byNet
			g2[3] += d2 * byNet * retro
		case o.replicas > 1:
			g2[4] += d2 * byNet
			g2[5] += d2 * byNet * retro
		}
		g2[gammaParam] += d2 * (-math.Log(sum)/(p.Gamma*p.Gamma) + (pa*math.Log(acc)+pn*math.Log(net))/(p.Gamma*sum))
	}
	rmse1, rmse2 := math.Sqrt(e1/n), math.Sqrt(e2/n)
	rn, rr := p.BetaN/p.AlphaN, p.BetaR/p.AlphaR
	value := rmse1 + rmse2 + 1e-3*(p.Gamma-1)*(p.Gamma-1) + 1e-2*(rn*rn+rr*rr)
	var grad [7]float64
	if !withGrad {
		return value, grad
	}
	// d sqrt(Σd²/n) = Σ d·dd / (n·rmse).
	for i := range grad {
		if rmse1 > 0 {
			grad[i] += g1[i] / (n * rmse1)
		}
		if rmse2 > 0 {
			grad[i] += g2[i] / (n * rmse2)
		}
	}
	grad[gammaParam] += 2e-3 * (p.Gamma - 1)
	grad[2] += -2e-2 * rn * rn / p.AlphaN
	grad[3] += 2e-2 * rn / p.AlphaN
	grad[4] += -2e-2 * rr * rr / p.AlphaR
	grad[5] += 2e-2 * rr / p.AlphaR
	// By the free variables.
	v := [7]float64{p.AlphaC, p.BetaC, p.AlphaN, p.BetaN, p.AlphaR, p.BetaR, p.Gamma}
	for i := range grad {
		if i == gammaParam {
			grad[i] *= (v[i] - 1) * (10 - v[i]) / 9
		} else {
			grad[i] *= v[i] - tiny
		}
	}
	return value, grad
}

// fits is the process's memo of throughput fits. A fit is a pure function
// of the observations, and the same profile is fitted many times over in
// a live cluster: by every GPU of a job (each steps the job's model, and
// they agree because they do the same work on the same state), and by a
// GPU's look one interval ahead, which meets each new configuration an
// interval before the job itself does. In a live Pollux replay's profile
// the fits were a third of the CPU, twelve times the offline run's.
var fits = newFitMemo(2048)

// fitMemo remembers the last size fits used, by their observations. Safe
// for concurrent use.
type fitMemo struct {
	cache *lru.Cache[string, PerfParams]
	// hits and misses count lookups (for tests).
	hits, misses atomic.Int64
}

// ForgetFits empties the process's memo of throughput fits, so that a run
// timed after another fits its profiles itself (cluster bench).
func ForgetFits() { fits.cache.Purge() }

func newFitMemo(size int) *fitMemo {
	c, err := lru.New[string, PerfParams](size)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &fitMemo{cache: c}
}

// fit is fitPerf(obs), remembered. Two callers missing the same profile
// at once both fit it, with the same result.
func (m *fitMemo) fit(obs []observation) PerfParams {
	key := profileKey(obs)
	if p, ok := m.cache.Get(key); ok {
		m.hits.Add(1)
		return p
	}
	m.misses.Add(1)
	p := fitPerf(obs)
	m.cache.Add(key, p)
	return p
}

// profileKey is the observations' exact content: every count and the bits
// of every time, in order (the fit depends on all of them, and on their
// order).
func profileKey(obs []observation) string {
	b := make([]byte, 0, len(obs)*5*binary.MaxVarintLen64)
	for _, o := range obs {
		b = binary.AppendVarint(b, int64(o.nodes))
		b = binary.AppendVarint(b, int64(o.replicas))
		b = binary.AppendVarint(b, int64(o.local))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(o.step))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(o.sync))
	}
	return string(b)
}
