package pollux

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/tracedir"
)

func loadModel(t testing.TB) *Model {
	t.Helper()
	m, err := Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// near is agreement to 1e-14 relative: Appendix A was computed from
// pandas-parsed inputs, which differ from a correctly rounded parser (Go's)
// by an ulp in about half the cells (MODEL.md Appendix A, §9.15).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-14*math.Abs(b) }

// TestAppendixAVectors are MODEL.md Appendix A's test vectors.
func TestAppendixAVectors(t *testing.T) {
	m := loadModel(t)
	cifar := m.Apps["cifar10"]
	st, _, err := cifar.Throughput([]int{4, 2}, 342)
	if err != nil || !near(st.Step, 0.2687774138630561) || !near(st.Sync, 0.020076066023898498) {
		t.Errorf("throughput(cifar10, (4,2), 342) = %v %v, want 0.2687774138630561 0.020076066023898498", st, err)
	}
	g2, _ := cifar.interp(2052, 0, gradSqrCol)
	s2, _ := cifar.interp(2052, 0, gradVarCol)
	if !near(g2, 10.740173318740531) || !near(s2, 5.498315492126224) {
		t.Errorf("gradstats(cifar10, 2052, 0) = %v %v", g2, s2)
	}
	if p := cifar.Bound(1); !near(p, 390.71438596642224) {
		t.Errorf("P(1) = %v", p)
	}
	c := cifar.Configure(2048, 6)
	if c != (Config{342, 0}) {
		t.Errorf("cifar10 6×2048 configures %+v, want a=342 k=0", c)
	}
	if gp, _, err := cifar.Goodput([]int{4, 2}, c, 0); err != nil || !near(gp, 5.451169676815282) {
		t.Errorf("goodput %v %v, want 5.451169676815282", gp, err)
	}
	o := NewOptimus()
	for n, want := range map[int]float64{1: 1.4036381702840328, 2: 0.8379724740982055, 8: 0.2599324620564778, 17: 0.16620862797686922, 64: 0.2692412376403809} {
		if got, err := o.stepTime(cifar, 2048, n); err != nil || !near(got, want) {
			t.Errorf("τ(%d) = %v %v, want %v", n, got, err, want)
		}
	}
	// §4.2's table, a few rows with caps and accumulation.
	for _, tc := range []struct {
		app  string
		r, b int
		want Config
	}{{"bert", 6, 384, Config{10, 5}}, {"cifar10", 12, 4096, Config{341, 0}}, {"imagenet", 48, 6400, Config{134, 0}}, {"ncf", 1, 32768, Config{16384, 1}}, {"yolov3", 4, 64, Config{8, 1}}} {
		if got := m.Apps[tc.app].Configure(tc.b, tc.r); got != tc.want {
			t.Errorf("%s %d×%d: %+v, want %+v", tc.app, tc.r, tc.b, got, tc.want)
		}
	}
}

// TestWorkload6 is the headline check: workload 6 at load 1.0,
// every job's JCT equal to the published one, under both policies.
func TestWorkload6(t *testing.T) {
	m := loadModel(t)
	for _, pol := range []string{"tiresias", "optimus"} {
		specs, err := ReadWorkload(filepath.Join(LoadFolder(m.Dir, 1), "workload-6.csv"))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := NewPolicy(pol)
		res, err := Run(m, specs, Reference, p)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := ReadPublished(m.Dir, pol, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := pub.JCTs["workload-6"]
		same, sum := 0, 0
		for _, j := range res.Jobs {
			sum += j.JCT()
			if j.JCT() == want[j.Name] {
				same++
			} else if same+1 < 5 {
				t.Logf("%s %s: JCT %d, published %d", pol, j.Name, j.JCT(), want[j.Name])
			}
		}
		if same != len(specs) {
			t.Errorf("%s: %d of %d JCTs equal the published; average %v, published %v", pol, same, len(specs), float64(sum)/float64(len(specs)), pub.Avgs["workload-6"])
		}
	}
}

// TestEveryPublishedRun: all 48 published Tiresias and Optimus runs (8
// workloads × loads 0.5, 1.0, 1.5), every job's JCT equal to the
// published one and the workload's average exactly the published average.
func TestEveryPublishedRun(t *testing.T) {
	m := loadModel(t)
	for _, pol := range []string{"tiresias", "optimus"} {
		for _, load := range []float64{0.5, 1, 1.5} {
			pub, err := ReadPublished(m.Dir, pol, load)
			if err != nil {
				t.Fatal(err)
			}
			for w := 1; w <= 8; w++ {
				name := fmt.Sprintf("workload-%d", w)
				specs, err := ReadWorkload(filepath.Join(LoadFolder(m.Dir, load), name+".csv"))
				if err != nil {
					t.Fatal(err)
				}
				p, _ := NewPolicy(pol)
				res, err := Run(m, specs, Reference, p)
				if err != nil {
					t.Fatalf("%s %g %s: %v", pol, load, name, err)
				}
				same, sum := 0, 0
				for _, j := range res.Jobs {
					if j.Approximate > 0 {
						t.Errorf("%s load %g %s: job %s used an interpolated step time: Appendix B should hold every query", pol, load, name, j.Name)
					}
					sum += j.JCT()
					if j.JCT() == pub.JCTs[name][j.Name] {
						same++
					}
				}
				if avg := float64(sum) / float64(len(specs)); same != len(specs) || avg != pub.Avgs[name] {
					t.Errorf("%s load %g %s: %d of %d JCTs equal; average %v, published %v", pol, load, name, same, len(specs), avg, pub.Avgs[name])
				}
			}
		}
	}
}

// TestEveryPublishedJobRunsOnItsReplicas: every job of every published
// workload passes CheckReplicas (a live cluster under Tiresias refuses a
// submission that fails it, so the replays must not have one), and a job
// whose batch spread over its replicas falls below what its placements
// were measured at fails it, naming the batch sizes that would run.
func TestEveryPublishedJobRunsOnItsReplicas(t *testing.T) {
	m := loadModel(t)
	dir := tracedir.Pollux(t)
	files, _ := filepath.Glob(filepath.Join(dir, "workloads*", "*.csv"))
	if len(files) == 0 {
		t.Fatalf("no workloads under %s", dir)
	}
	jobs := 0
	for _, f := range files {
		specs, err := ReadWorkload(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			jobs++
			if err := m.CheckReplicas(s); err != nil {
				t.Errorf("%s: %s: %v", filepath.Base(f), s.Name, err)
			}
		}
	}
	t.Logf("%d jobs in %d workloads", jobs, len(files))
	err := m.CheckReplicas(Spec{Name: "x", App: "cifar10", Batch: 128, Replicas: 6})
	if err == nil || !strings.Contains(err.Error(), "local batch of 22") {
		t.Fatalf("cifar10 at 128 on 6 replicas: %v, want refused (a local batch of 22)", err)
	}
}
