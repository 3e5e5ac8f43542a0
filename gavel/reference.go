package gavel

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// RunName is the name the reference runs give c
// (<mode>_<policy>_c<V>-<P>-<K>_… with multigpu_ in front for -m):
// static_fifo_c8-8-8_n60_seed0, cont_allox_c8-8-8_lam4800_w50-150_seed0.
func RunName(c Config) string {
	var b strings.Builder
	if c.MultiGPU {
		b.WriteString("multigpu_")
	}
	if c.Static() {
		fmt.Fprintf(&b, "static_%s_%s_n%d_seed%d", c.Policy, clusterName(c.Counts), c.WindowEnd, c.Seed)
	} else {
		fmt.Fprintf(&b, "cont_%s_%s_lam%s_w%d-%d_seed%d", c.Policy, clusterName(c.Counts), strconv.FormatFloat(c.Lam, 'f', -1, 64), c.WindowStart, c.WindowEnd, c.Seed)
	}
	return b.String()
}

// clusterName is c<V>-<P>-<K>.
func clusterName(counts [numTypes]int) string {
	return fmt.Sprintf("c%d-%d-%d", counts[V100], counts[P100], counts[K80])
}

// ParseCluster reads a cluster as the reference's -c spells it, V:P:K
// (V100, P100 and K80 GPUs), into counts by type.
func ParseCluster(text string) ([numTypes]int, error) {
	var counts [numTypes]int
	parts := strings.Split(text, ":")
	if len(parts) != 3 {
		return counts, fmt.Errorf("%q is not V:P:K (V100, P100 and K80 GPUs, e.g. 8:8:8)", text)
	}
	for i, w := range []int{V100, P100, K80} {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			return counts, fmt.Errorf("%q is not V:P:K (V100, P100 and K80 GPUs, e.g. 8:8:8): %q is not a count", text, parts[i])
		}
		counts[w] = n
	}
	return counts, nil
}

// runNamePattern reads a reference run's name: prefixes (multigpu_, the
// mode static_ or cont_, and names the reference chose: small_, paper_),
// the policy, the cluster, the static size or the rate and window, the
// seed. The mode is read from n or lam, not from the prefix.
var runNamePattern = regexp.MustCompile(`^((?:[a-z]+_)*?)([a-z]+)_c(\d+)-(\d+)-(\d+)_(?:n(\d+)|lam([0-9.]+)_w(\d+)-(\d+))_seed(\d+)$`)

// ParseRunName is the configuration a reference run's name spells.
func ParseRunName(name string) (Config, error) {
	m := runNamePattern.FindStringSubmatch(name)
	if m == nil {
		return Config{}, fmt.Errorf("%q is not a run name like static_fifo_c8-8-8_n60_seed0 or cont_allox_c8-8-8_lam4800_w50-150_seed0", name)
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	c := Config{Policy: m[2], MultiGPU: strings.Contains(m[1], "multigpu_")}
	c.Counts[V100], c.Counts[P100], c.Counts[K80] = atoi(m[3]), atoi(m[4]), atoi(m[5])
	seed, _ := strconv.ParseUint(m[10], 10, 64)
	c.Seed = seed
	if m[6] != "" {
		c.WindowEnd = atoi(m[6])
	} else {
		c.Lam, _ = strconv.ParseFloat(m[7], 64)
		c.WindowStart, c.WindowEnd = atoi(m[8]), atoi(m[9])
	}
	return c, nil
}

// Reference is a reference run read back: its per-job CSV and summary.
type Reference struct {
	Name string
	Jobs []JobResult
	// AverageJCT, Utilization and Makespan are the summary's figures.
	AverageJCT, Utilization, Makespan float64
	// Wall is how long the reference simulator took, in seconds.
	Wall float64
}

// ReadReference reads the reference run dir/runs/NAME.csv and NAME.json.
func ReadReference(dir, name string) (*Reference, error) {
	base := filepath.Join(dir, "runs", name)
	f, err := os.Open(base + ".csv")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jobs, err := ReadCSV(f)
	if err != nil {
		return nil, fmt.Errorf("%s.csv: %w", base, err)
	}
	raw, err := os.ReadFile(base + ".json")
	if err != nil {
		return nil, err
	}
	var summary struct {
		AverageJCT  float64 `json:"average_jct_s"`
		Utilization float64 `json:"utilization"`
		Makespan    float64 `json:"final_timestamp_s"`
		Wall        float64 `json:"wall_seconds"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		return nil, fmt.Errorf("%s.json: %w", base, err)
	}
	return &Reference{Name: name, Jobs: jobs, AverageJCT: summary.AverageJCT, Utilization: summary.Utilization, Makespan: summary.Makespan, Wall: summary.Wall}, nil
}

// csvHeader is the reference runs' per-job columns.
var csvHeader = []string{"job_id", "submit_s", "jct_s", "job_type", "scale_factor", "total_steps", "duration_s", "in_window"}

// ReadCSV reads a per-job file in the reference runs' columns.
func ReadCSV(r io.Reader) ([]JobResult, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		return nil, fmt.Errorf("want the header %s", strings.Join(csvHeader, ","))
	}
	var out []JobResult
	for i, row := range rows[1:] {
		line := i + 2
		var j JobResult
		var errs []error
		num := func(col int) float64 {
			v, err := strconv.ParseFloat(row[col], 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d, column %s: %q is not a number", line, csvHeader[col], row[col]))
			}
			return v
		}
		j.ID = int(num(0))
		j.Arrival = num(1)
		j.JCT = math.NaN()
		if row[2] != "" {
			j.JCT = num(2)
		}
		j.Type = row[3]
		j.Scale = int(num(4))
		j.TotalSteps = num(5)
		j.Duration = num(6)
		j.InWindow = row[7] == "1"
		if len(errs) > 0 {
			return nil, errs[0]
		}
		out = append(out, j)
	}
	return out, nil
}

// WriteCSV writes res's jobs in the reference runs' columns, floats as
// Python prints them (shortest round-trip form), so that a run of ours
// and the reference's can be compared with diff.
func WriteCSV(w io.Writer, res *Result) error {
	if _, err := fmt.Fprintln(w, strings.Join(csvHeader, ",")); err != nil {
		return err
	}
	for _, j := range res.Jobs {
		submit := pyFloat(j.Arrival)
		if j.ID == 0 {
			submit = "0" // the reference's first arrival is the integer 0
		}
		jct := ""
		if !math.IsNaN(j.JCT) {
			jct = pyFloat(j.JCT)
		}
		inWindow := 0
		if j.InWindow {
			inWindow = 1
		}
		if _, err := fmt.Fprintf(w, "%d,%s,%s,%q,%d,%s,%s,%d\n", j.ID, submit, jct, j.Type, j.Scale, pyFloat(j.TotalSteps), pyFloat(j.Duration), inWindow); err != nil {
			return err
		}
	}
	return nil
}

// pyFloat is Python's repr of a float: the shortest digits that read
// back exactly, in positional form with at least one decimal when the
// exponent is from −4 to 15, else as 1.5e+16.
func pyFloat(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// FindReference is the name of the reference run in dir/runs made with
// c: the name RunName gives it, or, in runs/INDEX.csv, a run whose name
// spells the same configuration (the paper's run is paper_allox_…).
func FindReference(dir string, c Config) (string, bool) {
	if _, err := os.Stat(filepath.Join(dir, "runs", RunName(c)+".csv")); err == nil {
		return RunName(c), true
	}
	names, err := ReferenceNames(dir)
	if err != nil {
		return "", false
	}
	for _, name := range names {
		if rc, err := ParseRunName(name); err == nil && rc == c {
			return name, true
		}
	}
	return "", false
}

// ReferenceNames are the runs listed in dir/runs/INDEX.csv, in its order.
func ReferenceNames(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, "runs", "INDEX.csv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	var names []string
	for _, row := range rows[1:] {
		names = append(names, row[0])
	}
	return names, nil
}

// JCTTolerance is how far apart two JCTs may be and count as equal
// (MODEL.md §8: the C library's pow and log may differ from ours in the
// last bit where they are not correctly rounded, which moves a JCT by
// about 1e-9 s).
const JCTTolerance = 1e-6

// Comparison is a run of ours beside the reference's, job by job.
type Comparison struct {
	// Jobs counts the jobs both generated; Equal those whose JCTs are
	// within JCTTolerance (two unfinished jobs are equal).
	Jobs, Equal int
	// MaxDiff is the largest |ΔJCT| in seconds among jobs both finished.
	MaxDiff float64
	// FirstDiffer is the first job whose JCT differs (−1: none).
	FirstDiffer int
}

// Compare sets res beside ref job by job.
func Compare(res *Result, ref *Reference) Comparison {
	c := Comparison{Jobs: min(len(res.Jobs), len(ref.Jobs)), FirstDiffer: -1}
	for i := range c.Jobs {
		got, want := res.Jobs[i].JCT, ref.Jobs[i].JCT
		same := math.IsNaN(got) && math.IsNaN(want)
		if !math.IsNaN(got) && !math.IsNaN(want) {
			d := math.Abs(got - want)
			c.MaxDiff = max(c.MaxDiff, d)
			same = d <= JCTTolerance
		}
		if same {
			c.Equal++
		} else if c.FirstDiffer < 0 {
			c.FirstDiffer = i
		}
	}
	if len(res.Jobs) != len(ref.Jobs) && c.FirstDiffer < 0 {
		c.FirstDiffer = c.Jobs
	}
	return c
}

// WriteSummary writes res's figures as JSON, in the reference summaries'
// field names where they have one.
func WriteSummary(w io.Writer, res *Result, wall float64) error {
	c := res.Config
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(map[string]any{
		"policy_arg": c.Policy, "policy_name": res.PolicyName, "seed": c.Seed, "lam": c.Lam,
		"cluster_spec":            map[string]int{"v100": c.Counts[V100], "p100": c.Counts[P100], "k80": c.Counts[K80]},
		"window":                  []int{c.WindowStart, c.WindowEnd},
		"generate_multi_gpu_jobs": c.MultiGPU, "interval_s": Round,
		"average_jct_s": res.AverageJCT, "utilization": res.Utilization, "final_timestamp_s": res.Makespan,
		"num_jobs_generated": len(res.Jobs), "num_jobs_completed": res.Completed,
		"num_window_jobs": c.WindowEnd - c.WindowStart, "rounds": res.Rounds, "wall_seconds": wall,
	})
}
