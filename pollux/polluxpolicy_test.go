package pollux

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// TestRepairLeavesAnAllocationTheClusterHolds: whatever the search breeds,
// repair leaves at most the node's GPUs on each node, each job within its
// replica limit, and at most one job spanning nodes on any node.
func TestRepairLeavesAnAllocationTheClusterHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	p := NewPollux(1)
	for trial := range 200 {
		jobs := 1 + rng.IntN(12)
		s := &search{p: p, jobs: make([]*Job, jobs), nodes: 6, gpu: 4, maxrep: make([]int, jobs)}
		for i := range s.maxrep {
			s.maxrep[i] = 1 + rng.IntN(10)
		}
		x := make(genome, jobs*s.nodes)
		for i := range x {
			x[i] = uint8(rng.IntN(7))
		}
		s.repair(x)
		spanning := make([]int, s.nodes)
		for i := range jobs {
			row := x[i*s.nodes : (i+1)*s.nodes]
			if sum(row) > s.maxrep[i] {
				t.Fatalf("trial %d: job %d has %d replicas, limit %d", trial, i, sum(row), s.maxrep[i])
			}
			if countNonzero(row) > 1 {
				for k, c := range row {
					if c > 0 {
						spanning[k]++
					}
				}
			}
		}
		for k := range s.nodes {
			used := 0
			for i := range jobs {
				used += int(x[i*s.nodes+k])
			}
			if used > s.gpu || spanning[k] > 1 {
				t.Fatalf("trial %d: node %d holds %d replicas and %d jobs spanning nodes", trial, k, used, spanning[k])
			}
		}
	}
}

// TestPolluxRunsRepeatAndAdapt: on the first 16 jobs of workload 6, the
// Pollux policy completes every job; the same seed gives the same JCTs
// (the search draws only from its seed); and its jobs are elastic — some
// job runs on several replica counts, and every job with a model chose
// batch sizes its application allows.
func TestPolluxRunsRepeatAndAdapt(t *testing.T) {
	m := loadModel(t)
	specs, err := ReadWorkload(filepath.Join(LoadFolder(m.Dir, 1), "workload-6.csv"))
	if err != nil {
		t.Fatal(err)
	}
	specs = specs[:16]
	run := func(seed uint64) ([]int, []*Job) {
		p := NewPollux(seed)
		p.Generations = 20
		res, err := Run(m, specs, Reference, p)
		if err != nil {
			t.Fatal(err)
		}
		var jcts []int
		for _, j := range res.Jobs {
			if !j.Done {
				t.Fatalf("job %s not done", j.Name)
			}
			jcts = append(jcts, j.JCT())
		}
		return jcts, res.Jobs
	}
	a, jobs := run(1)
	if b, _ := run(1); !slices.Equal(a, b) {
		t.Fatalf("seed 1 twice: %v then %v", a, b)
	}
	resized := 0
	for _, j := range jobs {
		counts := map[int]bool{}
		for _, o := range j.elastic.profile {
			counts[o.replicas] = true
			if o.local < j.app.MinLocal || o.local > j.app.MaxLocal {
				t.Errorf("job %s ran at local batch %d, outside %d..%d", j.Name, o.local, j.app.MinLocal, j.app.MaxLocal)
			}
		}
		if len(counts) > 1 {
			resized++
		}
	}
	if resized == 0 {
		t.Error("no job ran on more than one replica count: the policy does not scale jobs")
	}
}
