package pollux

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// eps is the ε every ceiling of MODEL.md carries: ⌈x − 1e-8⌉.
const eps = 1e-8

// ceilEps is ⌈x − ε⌉.
func ceilEps(x float64) int { return int(math.Ceil(x - eps)) }

// Step is a placement's time per optimizer step at a local batch size.
type Step struct{ Step, Sync float64 }

// Throughput is (T_step, T_sync) of a placement (replicas per node, in
// allocation order) at atomic batch size a (§3.4): Path A from
// placements.csv by the placement's id normalised by rotation, linear in a
// between its two neighbouring rows; Path B (five or more nodes) from the
// Appendix B table, or, for a query Appendix B does not hold (other
// workloads, other clusters, Pollux's shapes), interpolated from the
// measurements as pathb.go says: then exact is false, the value is not the
// reference's. A local batch outside a Path-A placement's rows is an
// error (the reference aborts there too).
func (app *App) Throughput(placement []int, a int) (st Step, exact bool, err error) {
	p := normalise(placement)
	var id strings.Builder
	replicas := 0
	for _, n := range p {
		id.WriteString(strconv.Itoa(n))
		replicas += n
	}
	if rows, ok := app.placements[id.String()]; ok {
		st, err := interpolate(rows, a, app.Name, id.String())
		return st, err == nil, err
	}
	key := [3]int{min(len(p), 16), replicas, a}
	if v, ok := app.pathB[key]; ok {
		return Step{v[0], v[1]}, true, nil
	}
	if len(p) == 0 {
		return Step{}, false, fmt.Errorf("%s: no step time for an empty placement", app.Name)
	}
	st, err = app.points.approximate(len(p), replicas, a)
	if err != nil {
		return Step{}, false, fmt.Errorf("%s: %d nodes, %d replicas at local batch %d: %w", app.Name, len(p), replicas, a, err)
	}
	return st, false, nil
}

// normalise drops empty nodes and takes the lexicographically smallest
// rotation: (4,2) is (2,4); (4,4,3,1) is (1,4,4,3); rotations only, not
// sorting.
func normalise(placement []int) []int {
	p := slices.DeleteFunc(slices.Clone(placement), func(n int) bool { return n == 0 })
	best := p
	for r := 1; r < len(p); r++ {
		rot := append(slices.Clone(p[r:]), p[:r]...)
		if slices.Compare(rot, best) < 0 {
			best = rot
		}
	}
	return best
}

// interpolate is Path A: linear in the local batch itself between the
// rows around a (the segment ending at a grid point), no extrapolation.
func interpolate(rows []stepRow, a int, app, id string) (Step, error) {
	n := len(rows)
	if n == 0 || a < rows[0].local || a > rows[n-1].local {
		return Step{}, fmt.Errorf("%s placement %s: local batch %d outside the measured %d..%d", app, id, a, rows[0].local, rows[n-1].local)
	}
	if n == 1 {
		return Step{rows[0].step, rows[0].syncTime}, nil
	}
	i, _ := slices.BinarySearchFunc(rows, a, func(r stepRow, a int) int { return r.local - a })
	i = min(max(i, 1), n-1)
	lo, hi := rows[i-1], rows[i]
	dx, at := float64(hi.local-lo.local), float64(a-lo.local)
	// float64() around each product keeps the compiler from fusing it
	// with the addition (the reference rounds each operation).
	return Step{
		Step: float64((hi.step-lo.step)/dx*at) + lo.step,
		Sync: float64((hi.syncTime-lo.syncTime)/dx*at) + lo.syncTime,
	}, nil
}

// column picks one per-epoch column of a validation file.
type column func(v *validation) []float64

func gradSqrCol(v *validation) []float64   { return v.gradSqr }
func gradVarCol(v *validation) []float64   { return v.gradVar }
func iterationCol(v *validation) []float64 { return v.iteration }

// interp is §3.3: the column at epoch e for global batch b, linear in b
// between the validation files around it.
func (app *App) interp(b, e int, col column) (float64, error) {
	if b < app.B0 || b > app.Bmax {
		return 0, fmt.Errorf("%s: batch size %d outside the measured %d..%d", app.Name, b, app.B0, app.Bmax)
	}
	up := slices.IndexFunc(app.valid, func(v validation) bool { return v.b >= b })
	hi := &app.valid[up]
	if hi.b == b {
		return col(hi)[e], nil
	}
	lo := &app.valid[up-1]
	return (float64(float64(b-lo.b)*col(hi)[e]) + float64(float64(hi.b-b)*col(lo)[e])) / float64(hi.b-lo.b), nil
}

// GradStats are the gradient's squared norm g² and variance σ² at global
// batch b in epoch e (§3.3).
func (app *App) GradStats(b, e int) (g2, s2 float64, err error) {
	if g2, err = app.interp(b, e, gradSqrCol); err != nil {
		return 0, 0, err
	}
	s2, err = app.interp(b, e, gradVarCol)
	return g2, s2, err
}

// Config is a job's configuration on a placement (§4.2): atomic batch a
// and accumulation steps k; its global batch is R·a·(k+1).
type Config struct{ A, K int }

// Configure is the TunedJobs rule (§4.2) for target batch b on R replicas.
func (app *App) Configure(b, replicas int) Config {
	local := ceilEps(float64(b) / float64(replicas))
	k := ceilEps(float64(local)/float64(app.MaxLocal)) - 1
	if replicas == 1 && b > app.B0 {
		k = max(1, k)
	}
	a := ceilEps(float64(local) / float64(k+1))
	a = min(a, int(float64(app.Bmax)/float64(replicas*(k+1))))
	return Config{a, k}
}

// Goodput is progress per second (B0-equivalent steps) of a job on
// placement with configuration c at epoch e (§4.4, no interference);
// exact is Throughput's.
func (app *App) Goodput(placement []int, c Config, e int) (gp float64, exact bool, err error) {
	st, exact, err := app.Throughput(placement, c.A)
	if err != nil {
		return 0, false, err
	}
	gp, err = app.goodputAt(st, placement, c, e)
	return gp, exact, err
}

// goodputAt is Goodput with the placement's step time st already looked up.
func (app *App) goodputAt(st Step, placement []int, c Config, e int) (float64, error) {
	replicas := 0
	for _, n := range placement {
		replicas += n
	}
	acc := st.Step - st.Sync
	beff := replicas * c.A * (c.K + 1)
	g2, s2, err := app.GradStats(beff, e)
	if err != nil {
		return 0, err
	}
	scale := float64(beff) / float64(app.B0)
	gain := (s2 + g2) / (s2/scale + g2)
	total := st.Step + float64(acc*float64(c.K))
	return gain / total, nil
}

// Bound is P(e), the progress at the end of epoch e−1 (§3.2).
func (app *App) Bound(e int) float64 { return app.bounds[e] }
