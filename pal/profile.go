package pal

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/gpusched/gpusched/internal/pyrand"
)

// Profile is a cluster's variability (§1): for each GPU (by id, numbered
// node by node) and application class, the multiplier on a job's
// iteration time there (1 is the median GPU of the measurements; bigger
// is slower).
type Profile [][NumClasses]float64

// DrawProfile draws gpus GPUs' multipliers as the artifact does (§1): for
// each GPU in id order, for each class in order A, B, C, D, one uniform
// choice with replacement from the class's pool (random.choice, one
// _randbelow each). rng is the scheduler process's generator, seeded
// with the profile seed; it goes on to serve the Random placements.
func DrawProfile(data *Data, rng *pyrand.Rand, gpus int) Profile {
	p := make(Profile, gpus)
	for g := range p {
		for c := range NumClasses {
			pool := data.Pools[c]
			p[g][c] = pool[rng.RandBelow(len(pool))]
		}
	}
	return p
}

// ReadProfile reads a profile file in the columns of the artifact copy's
// profile_seed42.csv (GPU_ID, PerfVar_classA … PerfVar_classD; GPU ids
// 0, 1, 2… in order): a profile given instead of drawn.
func ReadProfile(path string) (Profile, error) {
	cols := []string{"GPU_ID"}
	for _, c := range Classes {
		cols = append(cols, "PerfVar_"+c)
	}
	rows, err := readCSV(path, cols...)
	if err != nil {
		return nil, err
	}
	p := make(Profile, 0, len(rows))
	for i, r := range rows {
		id, err := r.integer("GPU_ID")
		if err != nil {
			return nil, err
		}
		if id != i {
			return nil, r.errorf("GPU_ID", "%d where %d was expected (ids count from 0 in order)", id, i)
		}
		var m [NumClasses]float64
		for c, name := range Classes {
			if m[c], err = r.positive("PerfVar_" + name); err != nil {
				return nil, err
			}
		}
		p = append(p, m)
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("%s: no GPUs", path)
	}
	return p, nil
}

// Levels are a profile's performance levels per class (§5.1), what
// PM-First and PAL choose GPUs by: Factor[c][g] is GPU g's slowdown
// factor for class c, its cluster's centroid over the median centroid,
// so every GPU of one level has the same factor and the median level is
// 1.
type Levels struct {
	Factor [NumClasses][]float64
	// Count is how many levels each class has.
	Count [NumClasses]int
}

// NewLevels clusters p's multipliers, class by class, as the artifact
// does (§5.1): K = 2 + the number of GPUs more than three sample standard
// deviations above the mean (the artifact's search for the best K
// returns after trying 2), then the K-means partition of the values, here
// the exact one-dimensional optimum (the artifact's scikit-learn K-means
// with 10 restarts finds it on these data: MODEL.md §5.1).
func NewLevels(p Profile) Levels {
	var lv Levels
	values := make([]float64, len(p))
	for c := range NumClasses {
		for g := range p {
			values[g] = p[g][c]
		}
		lv.Factor[c], lv.Count[c] = slowdownFactors(values)
	}
	return lv
}

// slowdownFactors clusters values and returns each one's factor and the
// number of clusters.
func slowdownFactors(values []float64) ([]float64, int) {
	n := len(values)
	mean, sd := meanStd(values)
	outliers := 0
	for _, v := range values {
		if v > mean+3*sd {
			outliers++
		}
	}
	k := min(2+outliers, n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case values[a] < values[b]:
			return -1
		case values[a] > values[b]:
			return 1
		}
		return 0
	})
	sorted := make([]float64, n)
	for i, g := range order {
		sorted[i] = values[g]
	}
	bounds := kmeans1D(sorted, k)
	centroids := make([]float64, 0, len(bounds))
	out := make([]float64, n)
	start := 0
	for _, end := range bounds {
		centroids = append(centroids, mean1(sorted[start:end]))
		start = end
	}
	// The median of the centroids (ascending by construction): the middle
	// one, or the mean of the middle two when there is an even number.
	var median float64
	if m := len(centroids); m%2 == 1 {
		median = centroids[m/2]
	} else {
		median = (centroids[m/2-1] + centroids[m/2]) / 2
	}
	start = 0
	for ci, end := range bounds {
		for i := start; i < end; i++ {
			out[order[i]] = centroids[ci] / median
		}
		start = end
	}
	return out, len(bounds)
}

// meanStd is the mean and the sample standard deviation (n−1).
func meanStd(v []float64) (mean, sd float64) {
	mean = mean1(v)
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

func mean1(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// kmeans1D partitions sorted values into at most k contiguous groups of
// least total squared distance to their means (dynamic programming over
// the split points: the optimal one-dimensional K-means). It returns each
// group's end index. Equal values never straddle a split, and a group is
// never empty (fewer groups when there are fewer distinct values).
func kmeans1D(sorted []float64, k int) []int {
	n := len(sorted)
	distinct := 1
	for i := 1; i < n; i++ {
		if sorted[i] != sorted[i-1] {
			distinct++
		}
	}
	k = min(k, distinct)
	// sse(i, j) is the squared distance of sorted[i:j] to its mean.
	sse := func(i, j int) float64 {
		m := mean1(sorted[i:j])
		var s float64
		for _, x := range sorted[i:j] {
			s += (x - m) * (x - m)
		}
		return s
	}
	// cost[g][j]: the best cost of sorted[:j] in g+1 groups; from[g][j]:
	// where its last group starts.
	cost := make([][]float64, k)
	from := make([][]int, k)
	for g := range k {
		cost[g] = make([]float64, n+1)
		from[g] = make([]int, n+1)
		for j := range cost[g] {
			cost[g][j] = math.Inf(1)
		}
	}
	for j := 1; j <= n; j++ {
		cost[0][j] = sse(0, j)
	}
	for g := 1; g < k; g++ {
		for j := g + 1; j <= n; j++ {
			for i := g; i < j; i++ {
				if sorted[i] == sorted[i-1] || math.IsInf(cost[g-1][i], 1) {
					continue // a split between equal values
				}
				if c := cost[g-1][i] + sse(i, j); c < cost[g][j] {
					cost[g][j], from[g][j] = c, i
				}
			}
		}
	}
	bounds := make([]int, k)
	j := n
	for g := k - 1; g >= 0; g-- {
		bounds[g] = j
		j = from[g][j]
	}
	return bounds
}

// WriteProfile writes p and its levels in the columns of the artifact
// copy's profile_seed42.csv (GPU_ID, Node_ID, PerfVar_* per class, sf_*
// and level_* per class, level 0 the fastest), GPUs perNode to a node.
func WriteProfile(w io.Writer, p Profile, lv Levels, perNode int) error {
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, "GPU_ID,Node_ID")
	for _, c := range Classes {
		fmt.Fprintf(bw, ",PerfVar_%s", c)
	}
	for _, c := range Classes {
		fmt.Fprintf(bw, ",sf_%s,level_%s", c, c)
	}
	fmt.Fprintln(bw)
	var ranks [NumClasses]map[float64]int
	for c := range NumClasses {
		levels := slices.Clone(lv.Factor[c])
		slices.Sort(levels)
		levels = slices.Compact(levels)
		ranks[c] = map[float64]int{}
		for i, s := range levels {
			ranks[c][s] = i
		}
	}
	for g, m := range p {
		fmt.Fprintf(bw, "%d,%d", g, g/perNode)
		for c := range NumClasses {
			fmt.Fprintf(bw, ",%s", strconv.FormatFloat(m[c], 'g', 17, 64))
		}
		for c := range NumClasses {
			s := lv.Factor[c][g]
			fmt.Fprintf(bw, ",%s,%d", strconv.FormatFloat(s, 'g', 17, 64), ranks[c][s])
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}
