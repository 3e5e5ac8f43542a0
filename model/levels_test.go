package model

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerformanceLevelsAreTheOptimalPartition checks the divide-and-
// conquer K-means against every contiguous partition of small seeded
// profiles (with ties, and with outliers that raise K): the same least
// total squared distance.
func TestPerformanceLevelsAreTheOptimalPartition(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 44))
	for trial := range 200 {
		n := 3 + r.IntN(10)
		values := make([]float64, n)
		for i := range values {
			values[i] = 0.95 + 0.01*float64(r.IntN(8)) // ties
		}
		if trial%3 == 0 {
			values[r.IntN(n)] = 2.5 // an outlier: K = 3
		}
		factor, level, count := PerformanceLevels(values)
		if len(factor) != n || len(level) != n || count < 1 {
			t.Fatalf("%v: %d factors, %d levels, count %d", values, len(factor), len(level), count)
		}
		got := sseOf(values, level, count)
		best := bruteForce(values, count)
		if math.Abs(got-best) > 1e-12 {
			t.Fatalf("%v in %d levels: squared distance %v, the optimum %v", values, count, got, best)
		}
		for g := range values {
			for h := range values {
				if values[g] < values[h] && level[g] > level[h] {
					t.Fatalf("%v: a faster GPU (%v) in a slower level than %v", values, values[g], values[h])
				}
			}
		}
	}
	// PAL's seed-42 shape: 51 fast GPUs, 12 median, one at 2.59×: three
	// levels, the median one at factor 1.
	var values []float64
	for range 51 {
		values = append(values, 0.93)
	}
	for range 12 {
		values = append(values, 1.02)
	}
	values = append(values, 2.59)
	factor, level, count := PerformanceLevels(values)
	if count != 3 || factor[60] != 1 || level[0] != 0 || level[63] != 2 {
		t.Errorf("levels %d, factors %v %v %v, want 3 levels, the median at 1", count, factor[0], factor[60], factor[63])
	}
}

func sseOf(values []float64, level []int, count int) float64 {
	sum, n := make([]float64, count), make([]float64, count)
	for g, v := range values {
		sum[level[g]] += v
		n[level[g]]++
	}
	var s float64
	for g, v := range values {
		m := sum[level[g]] / n[level[g]]
		s += (v - m) * (v - m)
	}
	return s
}

// bruteForce is the least squared distance of values in k groups, every
// grouping of the sorted values into contiguous runs tried.
func bruteForce(values []float64, k int) float64 {
	s := append([]float64(nil), values...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	best := math.Inf(1)
	var try func(start, groups int, acc float64)
	try = func(start, groups int, acc float64) {
		if groups == 1 {
			best = min(best, acc+sse(s[start:]))
			return
		}
		for end := start + 1; end <= len(s)-groups+1; end++ {
			try(end, groups-1, acc+sse(s[start:end]))
		}
	}
	try(0, k, 0)
	return best
}

func sse(v []float64) float64 {
	var m float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	var s float64
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s
}

// BenchmarkPerformanceLevels100k is a 100,000-GPU cluster's levels (the
// dashboard's snapshot computes them when GPUs join).
func BenchmarkPerformanceLevels100k(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	values := make([]float64, 100000)
	for i := range values {
		values[i] = 0.9 + 0.2*r.Float64()
	}
	for b.Loop() {
		PerformanceLevels(values)
	}
}

// TestReadVariabilityNamesWhatIsWrong: a profile file reads into one
// map per GPU; a bad one gets an error naming the line and column.
func TestReadVariabilityNamesWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.csv", "# a comment\nGPU_ID,Node_ID,PerfVar_classA,PerfVar_classB\n0,0,0.95,1.01\n1,0,1.05,0.99\n")
	prof, err := ReadVariability(good)
	if err != nil || len(prof) != 2 || prof[1]["classA"] != 1.05 || prof[0]["classB"] != 1.01 {
		t.Fatalf("read %v, %v", prof, err)
	}
	for want, text := range map[string]string{
		"PerfVar_<class>":        "GPU_ID,speed\n0,1\n",
		"GPU_ID \"2\"":           "GPU_ID,PerfVar_a\n0,1\n2,1\n",
		"column PerfVar_a":       "GPU_ID,PerfVar_a\n0,-1\n",
		"no GPUs":                "GPU_ID,PerfVar_a\n",
		"line 3, column PerfVar": "GPU_ID,PerfVar_a\n0,1\n1,x\n",
	} {
		if _, err := ReadVariability(write("bad.csv", text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one naming %s", text, err, want)
		}
	}
}
