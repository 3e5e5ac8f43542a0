package pal

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/gpusched/gpusched/internal/pyrand"
	"github.com/gpusched/gpusched/internal/tracedir"
)

func load(t *testing.T) (string, *Data) {
	t.Helper()
	dir := tracedir.PAL(t)
	data, err := LoadData(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// TestDrawnProfileIsTheArtifacts draws seed 42's profile and checks it
// against the one read from an artifact run, and the performance levels
// against the artifact's K-means factors. The file's values are within
// one unit in the last place of the draws, not always equal (74 of 256
// differ): the reference runs' own last_pm_penalty columns agree with the
// draws bit for bit (TestReferenceRunsJobByJob compares them byte for
// byte), so it is the file's copy that is an ulp off.
func TestDrawnProfileIsTheArtifacts(t *testing.T) {
	dir, data := load(t)
	want, err := ReadProfile(filepath.Join(dir, "data", "profile_seed42.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got := DrawProfile(data, pyrand.New(42), 64)
	for g := range want {
		for c := range NumClasses {
			if d := math.Abs(got[g][c] - want[g][c]); d > 1.5*ulp(want[g][c]) {
				t.Fatalf("GPU %d %s: drew %v, the artifact %v", g, Classes[c], got[g][c], want[g][c])
			}
		}
	}
	rows, err := readCSV(filepath.Join(dir, "data", "profile_seed42.csv"), "sf_classA")
	if err != nil {
		t.Fatal(err)
	}
	lv := NewLevels(got)
	if lv.Count != [NumClasses]int{3, 2, 2, 2} {
		t.Errorf("levels per class %v, the artifact's 3, 2, 2, 2", lv.Count)
	}
	for g, r := range rows {
		for c, name := range Classes {
			sf, err := r.number("sf_" + name)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(lv.Factor[c][g]-sf) > 1e-12 {
				t.Errorf("GPU %d %s: factor %v, the artifact's %v", g, name, lv.Factor[c][g], sf)
			}
		}
	}
}

// TestReferenceRunsJobByJob replays every run of runs/ and compares
// every tracked job's JCT, the CSV byte for byte, and the summary.
func TestReferenceRunsJobByJob(t *testing.T) {
	dir, data := load(t)
	refs, err := ReadConfigs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) == 0 {
		t.Fatal("no reference runs in configs.txt")
	}
	for _, ref := range refs {
		t.Run(ref.Name, func(t *testing.T) {
			trace, err := ReadTrace(TracePath(dir, ref.Workload), data.Models)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), data, trace, ref.Config)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "runs", ref.Name+".jobs.csv")
			want, err := ReadJobs(path)
			if err != nil {
				t.Fatal(err)
			}
			equal := 0
			for _, j := range res.Jobs {
				if w, ok := want[j.ID]; ok && math.Abs(w-j.JCT) <= 1e-6 {
					equal++
				} else if ok {
					t.Errorf("job %d: JCT %v, the artifact's %v", j.ID, j.JCT, w)
				}
			}
			if equal != len(want) || len(res.Jobs) != len(want) {
				t.Fatalf("%d of %d JCTs equal (%d jobs reported)", equal, len(want), len(res.Jobs))
			}
			var buf bytes.Buffer
			if err := WriteCSV(&buf, res); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := os.ReadFile(filepath.Join(dir, "runs", ref.Name+".summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var published struct {
				Avg        float64 `json:"avg_jct_s"`
				P99        float64 `json:"p99_jct_s_artifact"`
				Median     float64 `json:"median_jct_s"`
				Makespan   float64 `json:"makespan_s"`
				LastFinish float64 `json:"last_finish_s"`
				Rounds     int     `json:"sim_rounds"`
				Util       float64 `json:"gpu_util_mean"`
			}
			if err := json.Unmarshal(sum, &published); err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.AvgJCT-published.Avg) > 1e-9 || res.P99JCT != published.P99 || res.MedianJCT != published.Median ||
				res.Makespan != published.Makespan || res.LastFinish != published.LastFinish || res.Rounds != published.Rounds ||
				math.Abs(res.Utilisation-published.Util) > 1e-12 {
				t.Errorf("summary: avg %v p99 %v median %v makespan %v last %v rounds %d util %v; the artifact's %+v",
					res.AvgJCT, res.P99JCT, res.MedianJCT, res.Makespan, res.LastFinish, res.Rounds, res.Utilisation, published)
			}
			if !bytes.Equal(buf.Bytes(), raw) {
				t.Errorf("CSV differs from the artifact's: %s", firstDiff(buf.String(), string(raw)))
			}
		})
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := bytes.Split([]byte(got), []byte("\n")), bytes.Split([]byte(want), []byte("\n"))
	for i := range min(len(g), len(w)) {
		if !bytes.Equal(g[i], w[i]) {
			return "line " + itoa(i+1) + ": " + string(g[i]) + "\n     vs " + string(w[i])
		}
	}
	return "lengths differ"
}

func itoa(i int) string { return strconv.Itoa(i) }

// ulp is the gap between x and the next float64 above it.
func ulp(x float64) float64 { return math.Nextafter(x, math.Inf(1)) - x }

// TestWrittenProfileReadsBack writes a drawn profile with its levels and
// reads it back: the same multipliers bit for bit, the levels ranked.
func TestWrittenProfileReadsBack(t *testing.T) {
	_, data := load(t)
	p := DrawProfile(data, pyrand.New(7), 64)
	var buf bytes.Buffer
	if err := WriteProfile(&buf, p, NewLevels(p), 4); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "profile.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	for g := range p {
		if back[g] != p[g] {
			t.Fatalf("GPU %d: wrote %v, read %v", g, p[g], back[g])
		}
	}
	if !bytes.Contains(buf.Bytes(), []byte(",level_classD\n")) {
		t.Errorf("header lacks the level columns: %s", bytes.SplitN(buf.Bytes(), []byte("\n"), 2)[0])
	}
}

// TestEveryRoundIsTheArtifacts compares every round of every reference
// run with the artifact's rounds.jsonl (each round as it found the
// cluster: the last placement less what completed): the same jobs on the
// same GPUs, with the same slowest multiplier and locality penalty, and
// as many GPUs free — the placement itself, not only its JCTs.
func TestEveryRoundIsTheArtifacts(t *testing.T) {
	dir, data := load(t)
	refs, err := ReadConfigs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		trace, err := ReadTrace(TracePath(dir, ref.Workload), data.Models)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDriver(data, trace, ref.Config)
		if err != nil {
			t.Fatal(err)
		}
		for gen := NewGenerator(trace, ref.Config); !d.Done(); {
			d.Step(gen)
		}
		want, err := ReadRounds(filepath.Join(dir, "runs", ref.Name+".rounds.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		got := d.Rounds()
		if len(got) != len(want) {
			t.Errorf("%s: %d rounds, the artifact %d", ref.Name, len(got), len(want))
			continue
		}
		for i := range got {
			g, w := got[i], want[i]
			same := g.T == w.T && g.Free == w.Free && len(g.Alloc) == len(w.Alloc)
			for id, gpus := range w.Alloc {
				mine := slices.Clone(g.Alloc[id])
				theirs := slices.Clone(gpus)
				slices.Sort(mine)
				slices.Sort(theirs)
				same = same && slices.Equal(mine, theirs) && g.PM[id] == w.PM[id] && g.Loc[id] == w.Loc[id]
			}
			if !same {
				t.Errorf("%s round %d (t=%v): %v free, alloc %v; the artifact %v free, alloc %v", ref.Name, i, g.T, g.Free, g.Alloc, w.Free, w.Alloc)
				break
			}
		}
	}
}
