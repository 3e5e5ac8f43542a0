package pal

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/gpusched/gpusched/internal/pyrand"
	"github.com/gpusched/gpusched/model"
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

// ReadProfile reads a profile file in the columns of the artifact
// copy's profile_seed42.csv (model.ReadVariability: GPU_ID, and
// PerfVar_classA … PerfVar_classD, every one of the four required): a
// profile given instead of drawn.
func ReadProfile(path string) (Profile, error) {
	rows, err := model.ReadVariability(path)
	if err != nil {
		return nil, err
	}
	p := make(Profile, len(rows))
	for g, r := range rows {
		for c, name := range Classes {
			m, ok := r[name]
			if !ok {
				return nil, fmt.Errorf("%s: no column PerfVar_%s (a PAL profile has the four classes)", path, name)
			}
			p[g][c] = m
		}
	}
	return p, nil
}

// Levels are a profile's performance levels per class (§5.1), what
// PM-First and PAL choose GPUs by (model.PerformanceLevels): Factor[c][g]
// is GPU g's slowdown factor for class c, its level's centroid over the
// median centroid, so every GPU of one level has the same factor and the
// median level is 1; Level[c][g] is the level's rank, 0 the fastest.
type Levels struct {
	Factor [NumClasses][]float64
	Level  [NumClasses][]int
	// Count is how many levels each class has.
	Count [NumClasses]int
}

// NewLevels clusters p's multipliers, class by class, as the artifact
// does (model.PerformanceLevels).
func NewLevels(p Profile) Levels {
	var lv Levels
	values := make([]float64, len(p))
	for c := range NumClasses {
		for g := range p {
			values[g] = p[g][c]
		}
		lv.Factor[c], lv.Level[c], lv.Count[c] = model.PerformanceLevels(values)
	}
	return lv
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
	for g, m := range p {
		fmt.Fprintf(bw, "%d,%d", g, g/perNode)
		for c := range NumClasses {
			fmt.Fprintf(bw, ",%s", strconv.FormatFloat(m[c], 'g', 17, 64))
		}
		for c := range NumClasses {
			fmt.Fprintf(bw, ",%s,%d", strconv.FormatFloat(lv.Factor[c][g], 'g', 17, 64), lv.Level[c][g])
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}
