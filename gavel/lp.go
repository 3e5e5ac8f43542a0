package gavel

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// program is a linear program in the form every LP policy here writes:
// maximise objective·x subject to rows·x ≤ bounds and x ≥ 0, with every
// bound ≥ 0. Written so, the slack of each row is a feasible first basis
// (x = 0), and the simplex needs no first phase.
type program struct {
	objective []float64
	rows      [][]float64
	bounds    []float64
}

// newProgram is a program over n variables.
func newProgram(n int) *program { return &program{objective: make([]float64, n)} }

// row adds the constraint coefficients·x ≤ bound (bound ≥ 0), scaled so
// that its largest coefficient is 1 in magnitude: the same constraint,
// and pivots the simplex can take without losing digits (a job's
// remaining steps, 10^6 and more, beside time fractions of 1 made the
// dual's first phase stall).
func (p *program) row(coefficients []float64, bound float64) {
	scale := 0.0
	for _, c := range coefficients {
		scale = max(scale, math.Abs(c))
	}
	if scale > 0 {
		for j := range coefficients {
			coefficients[j] /= scale
		}
		bound /= scale
	}
	p.rows = append(p.rows, coefficients)
	p.bounds = append(p.bounds, bound)
}

// simplexTolerance is the simplex's tolerance on reduced costs and
// pivots: far below the 1e-6 relative the policies' optima are checked
// to, far above float64's rounding on these problems' sizes.
const simplexTolerance = 1e-10

// solve is the program's optimum: x and its objective value. It runs
// gonum's simplex (lp.Simplex, which minimises c·x subject to A·x = b,
// x ≥ 0) on the program with a slack per row, starting from the slack
// basis, or from gonum's first phase where that start fails.
func (p *program) solve() (x []float64, value float64, err error) {
	n, m := len(p.objective), len(p.rows)
	if m == 0 {
		return make([]float64, n), 0, nil
	}
	a := mat.NewDense(m, n+m, nil)
	c := make([]float64, n+m)
	basis := make([]int, m)
	for j, v := range p.objective {
		c[j] = -v
	}
	for i, r := range p.rows {
		for j, v := range r {
			a.Set(i, j, v)
		}
		a.Set(i, n+i, 1)
		basis[i] = n + i
		if p.bounds[i] < 0 {
			return nil, 0, fmt.Errorf("gavel: row %d has a negative bound %v: the slack basis would not be feasible", i, p.bounds[i])
		}
	}
	optF, optX, err := lp.Simplex(c, a, p.bounds, simplexTolerance, basis)
	if err != nil {
		// From the slack basis gonum's simplex can step onto a singular
		// basis on degenerate programs (seen on a packed max-min program
		// of 26 jobs: testdata/packed-singular-slack-basis.json.gz); its
		// own first phase, which finds another start, solves them.
		optF, optX, err = lp.Simplex(c, a, p.bounds, simplexTolerance, nil)
		if err != nil {
			return nil, 0, err
		}
	}
	if verifySolution != nil {
		verifySolution(p, optX[:n], -optF)
	}
	return optX[:n], -optF, nil
}

// verifySolution, when set (by tests), is shown every program solved
// with its solution and value.
var verifySolution func(p *program, x []float64, value float64)

// dualValue is the optimum of the program's dual — minimise bounds·y
// subject to rowsᵀ·y ≥ objective, y ≥ 0 — solved as a program of its
// own. By strong duality it equals the primal's optimum: the independent
// check the policies' tests make of every optimum they find. It asks
// gonum's first phase for a start (dualByFirstPhase); where that fails
// it starts from a basis of its own making:
//
// In standard form each column j of the primal is a row rowsⱼᵀ·y − sⱼ =
// objectiveⱼ with a surplus sⱼ. Where objectiveⱼ ≤ 0 the surplus is a
// feasible first basic variable (sⱼ = −objectiveⱼ at y = 0); where it is
// positive (a level's column) an artificial aⱼ joins the row, priced at
// bigM in the objective, and starts the basis instead. So no first phase
// is needed: gonum's failed on the packed program's dual, most of whose
// right-hand side is 0. An optimum with an artificial left positive
// would mean bigM was too small for this dual, and is an error.
func (p *program) dualValue() (float64, error) {
	if v, err := p.dualByFirstPhase(); err == nil {
		return v, nil
	}
	n, m := len(p.objective), len(p.rows)
	var artificial []int // the rows with a positive objective
	for j, v := range p.objective {
		if v > 0 {
			artificial = append(artificial, j)
		}
	}
	cols := m + n + len(artificial)
	a := mat.NewDense(n, cols, nil)
	c := make([]float64, cols)
	copy(c, p.bounds)
	basis := make([]int, n)
	for j := range n {
		for i := range m {
			a.Set(j, i, p.rows[i][j])
		}
		a.Set(j, m+j, -1)
		basis[j] = m + j
	}
	for k, j := range artificial {
		col := m + n + k
		a.Set(j, col, 1)
		c[col] = bigM
		basis[j] = col
	}
	optF, y, err := lp.Simplex(c, a, p.objective, simplexTolerance, basis)
	if err != nil {
		return 0, err
	}
	for k := range artificial {
		if y[m+n+k] > 1e-9 {
			return 0, fmt.Errorf("gavel: the dual's artificial %d stayed at %v: bigM is too small for it", k, y[m+n+k])
		}
	}
	return optF, nil
}

// dualByFirstPhase is the dual's optimum from gonum's first phase, in
// standard form with a surplus per column (rowsᵀ·y − s = objective).
func (p *program) dualByFirstPhase() (float64, error) {
	n, m := len(p.objective), len(p.rows)
	a := mat.NewDense(n, m+n, nil)
	c := make([]float64, m+n)
	copy(c, p.bounds)
	for j := range n {
		for i := range m {
			a.Set(j, i, p.rows[i][j])
		}
		a.Set(j, m+j, -1)
	}
	optF, _, err := lp.Simplex(c, a, p.objective, simplexTolerance, nil)
	return optF, err
}

// bigM prices dualValue's artificials: far above any dual optimum here
// (rows are scaled to coefficients of at most 1, so a dual optimum is a
// level of at most a few units times a bound of at most the cluster's
// GPUs), far below where it would swamp float64's digits.
const bigM = 1e6
