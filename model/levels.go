package model

import (
	"math"
	"slices"
)

// PerformanceLevels groups GPUs by how fast they run one application
// class, as PAL (SC'24) does: values are the GPUs' multipliers for the
// class (GPUSpec.Variability); K = 2 + the number of GPUs more than three
// sample standard deviations above the mean (PAL's search for the best K
// returns after trying 2), and the levels are the K-means partition of
// the values — here the exact one-dimensional optimum, which PAL's
// scikit-learn K-means (10 restarts) finds on its data. Each GPU's factor
// is its level's centroid over the median centroid (so the median level
// is 1, and GPUs of one level have the same factor); level is the
// level's rank, 0 the fastest; count is how many levels there are (fewer
// than K when there are fewer distinct values).
func PerformanceLevels(values []float64) (factor []float64, level []int, count int) {
	n := len(values)
	if n == 0 {
		return nil, nil, 0
	}
	mean, sd := meanStd(values)
	outliers := 0
	for _, v := range values {
		if v > mean+3*sd {
			outliers++
		}
	}
	// The distinct values ascending, each with how many GPUs have it:
	// equal values are never split between levels.
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	var distinct []float64
	var weight []int
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			distinct = append(distinct, v)
			weight = append(weight, 0)
		}
		weight[len(weight)-1]++
	}
	bounds := kmeans1D(distinct, weight, min(2+outliers, len(distinct)))
	// Each level's centroid: the mean of its GPUs' values, summed in
	// ascending order.
	centroids := make([]float64, len(bounds))
	levelOf := map[float64]int{}
	start := 0
	for l, end := range bounds {
		var sum float64
		w := 0
		for i := start; i < end; i++ {
			for range weight[i] {
				sum += distinct[i]
			}
			w += weight[i]
			levelOf[distinct[i]] = l
		}
		centroids[l] = sum / float64(w)
		start = end
	}
	// The median of the centroids (ascending): the middle one, or the mean
	// of the middle two when there is an even number.
	var median float64
	if m := len(centroids); m%2 == 1 {
		median = centroids[m/2]
	} else {
		median = (centroids[m/2-1] + centroids[m/2]) / 2
	}
	factor, level = make([]float64, n), make([]int, n)
	for g, v := range values {
		level[g] = levelOf[v]
		factor[g] = centroids[level[g]] / median
	}
	return factor, level, len(bounds)
}

// meanStd is the mean and the sample standard deviation (n−1).
func meanStd(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// kmeans1D partitions the ascending distinct values, each weight[i]
// times, into k contiguous groups of least total squared distance to
// their means, and returns each group's end index. It is the dynamic
// programme over split points, each layer computed by divide and conquer
// (the best split point never moves left as the end moves right: the
// squared-distance cost satisfies the quadrangle inequality), so
// O(k·n·log n) for n distinct values — fast enough for a 100,000-GPU
// cluster's dashboard.
func kmeans1D(values []float64, weight []int, k int) []int {
	n := len(values)
	// Prefix sums of the weights, of weight × value and of weight × value²
	// (about the first value, which keeps the differences small).
	w := make([]float64, n+1)
	s1 := make([]float64, n+1)
	s2 := make([]float64, n+1)
	for i, v := range values {
		d := v - values[0]
		w[i+1] = w[i] + float64(weight[i])
		s1[i+1] = s1[i] + float64(weight[i])*d
		s2[i+1] = s2[i] + float64(weight[i])*d*d
	}
	sse := func(i, j int) float64 { // values[i:j]
		n := w[j] - w[i]
		sum := s1[j] - s1[i]
		return max(0, s2[j]-s2[i]-sum*sum/n)
	}
	prev := make([]float64, n+1)
	for j := 1; j <= n; j++ {
		prev[j] = sse(0, j)
	}
	from := make([][]int, k)
	for g := 1; g < k; g++ {
		cur := make([]float64, n+1)
		from[g] = make([]int, n+1)
		for j := range cur {
			cur[j] = math.Inf(1)
		}
		var solve func(lo, hi, optLo, optHi int)
		solve = func(lo, hi, optLo, optHi int) {
			if lo > hi {
				return
			}
			mid := (lo + hi) / 2
			best, at := math.Inf(1), optLo
			for i := optLo; i <= min(mid-1, optHi); i++ {
				if c := prev[i] + sse(i, mid); c < best {
					best, at = c, i
				}
			}
			cur[mid], from[g][mid] = best, at
			solve(lo, mid-1, optLo, at)
			solve(mid+1, hi, at, optHi)
		}
		solve(g+1, n, g, n-1)
		prev = cur
	}
	bounds := make([]int, k)
	j := n
	for g := k - 1; g >= 0; g-- {
		bounds[g] = j
		if g > 0 {
			j = from[g][j]
		}
	}
	return bounds
}
