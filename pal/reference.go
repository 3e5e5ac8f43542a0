package pal

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Reference is one run of the artifact's simulator kept with its data
// (a line of runs/configs.txt): its name and configuration.
type Reference struct {
	Name     string
	Workload int
	Config   Config
}

// ReadConfigs reads runs/configs.txt of the artifact copy in dir: NAME
// TRACE PLACEMENT SCHED START END LF MACHINES PSEED WSEED per line.
func ReadConfigs(dir string) ([]Reference, error) {
	path := filepath.Join(dir, "runs", "configs.txt")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Reference
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		bad := func(what string) error { return fmt.Errorf("%s line %d: %s", path, line, what) }
		if len(fields) != 10 {
			return nil, bad(fmt.Sprintf("%d fields, 10 expected (NAME TRACE PLACEMENT SCHED START END LF MACHINES PSEED WSEED)", len(fields)))
		}
		var w int
		if _, err := fmt.Sscanf(fields[1], "workload-%d", &w); err != nil {
			return nil, bad(fmt.Sprintf("TRACE %q is not workload-N", fields[1]))
		}
		c := Defaults()
		var ok bool
		if c.Placement, ok = PlacementName(fields[2]); !ok {
			return nil, bad(unknownPlacement(fields[2]).Error())
		}
		if c.Queue, ok = QueueName(fields[3]); !ok {
			return nil, bad(unknownQueue(fields[3]).Error())
		}
		ints := []*int{&c.TrackStart, &c.TrackEnd}
		for i, p := range ints {
			if *p, err = strconv.Atoi(fields[4+i]); err != nil {
				return nil, bad(fmt.Sprintf("%q is not a job id", fields[4+i]))
			}
		}
		if c.Locality, err = strconv.ParseFloat(fields[6], 64); err != nil {
			return nil, bad(fmt.Sprintf("LF %q is not a number", fields[6]))
		}
		if c.Machines, err = strconv.Atoi(fields[7]); err != nil {
			return nil, bad(fmt.Sprintf("MACHINES %q is not a number", fields[7]))
		}
		if c.ProfileSeed, err = strconv.ParseUint(fields[8], 10, 64); err != nil {
			return nil, bad(fmt.Sprintf("PSEED %q is not a seed", fields[8]))
		}
		if c.WorkloadSeed, err = strconv.ParseUint(fields[9], 10, 64); err != nil {
			return nil, bad(fmt.Sprintf("WSEED %q is not a seed", fields[9]))
		}
		if err := c.Validate(); err != nil {
			return nil, bad(err.Error())
		}
		out = append(out, Reference{Name: fields[0], Workload: w, Config: c})
	}
	return out, sc.Err()
}

// JobsHeader is the header of a per-job CSV, the reference runs' columns.
const JobsHeader = "job_id,submit_s,finish_s,jct_s,num_gpus,model,perfclass,iter_time_s,total_iters,nominal_runtime_s,last_pm_penalty,last_locality_penalty"

// WriteCSV writes r's tracked jobs in the reference runs' columns and
// number formats (Python's: a float's shortest repr with ".0" when whole,
// the finish as a whole number of seconds, the nominal run time rounded
// to 6 decimals; Python's csv module ends lines with CRLF), in id order.
func WriteCSV(w io.Writer, r *Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprint(bw, JobsHeader+"\r\n")
	for _, j := range r.Jobs {
		fmt.Fprintf(bw, "%d,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s\r\n", j.ID, pyFloat(j.Submit), strconv.FormatFloat(j.Finish, 'f', -1, 64),
			pyFloat(j.JCT), j.GPUs, j.Model, j.Class, pyFloat(j.IterTime), pyFloat(j.TotalIters), pyFloat(round6(j.Nominal())),
			pyFloat(j.PM), pyFloat(j.Loc))
	}
	return bw.Flush()
}

// round6 is Python's round(x, 6): the float nearest x's decimal
// rounding to 6 places (via the exact decimal, as CPython does).
func round6(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 6, 64), 64)
	return v
}

// pyFloat is Python's repr of a float for the magnitudes these files
// hold: the shortest digits that read back, ".0" added when whole.
func pyFloat(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// ReadJobs reads a per-job CSV in the reference runs' columns: each job's
// id and JCT, and the rows as written.
func ReadJobs(path string) (map[int]float64, error) {
	rows, err := readCSV(path, "job_id", "jct_s")
	if err != nil {
		return nil, err
	}
	out := map[int]float64{}
	for _, r := range rows {
		id, err := r.integer("job_id")
		if err != nil {
			return nil, err
		}
		if out[id], err = r.number("jct_s"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ShortName is a placement's short artifact name as the reference runs'
// file names spell it (PAL, PMFirst, PackedS, PackedNS, RandomS,
// RandomNS).
func ShortName(placement string) string {
	return strings.NewReplacer("Default-", "", "-", "").Replace(ArtifactPlacement(placement))
}

// RunName names a run of workload n under c as the reference runs are
// named (w1_fifo_PAL), with what differs from the artifact's defaults
// appended: _lf2.5 (locality), _ps7 (profile seed), _ws3 (workload
// seed), _t6-59 (tracked ids, when not 0-159).
func RunName(n int, c Config) string {
	name := fmt.Sprintf("w%d_%s_%s", n, c.Queue, ShortName(c.Placement))
	def := Defaults()
	if c.Locality != def.Locality {
		name += "_lf" + strconv.FormatFloat(c.Locality, 'f', -1, 64)
	}
	if c.ProfileSeed != def.ProfileSeed {
		name += fmt.Sprintf("_ps%d", c.ProfileSeed)
	}
	if c.WorkloadSeed != def.WorkloadSeed {
		name += fmt.Sprintf("_ws%d", c.WorkloadSeed)
	}
	if c.TrackStart != def.TrackStart || c.TrackEnd != def.TrackEnd {
		name += fmt.Sprintf("_t%d-%d", c.TrackStart, c.TrackEnd)
	}
	return name
}

// FindReference is the reference run of workload n with configuration c
// among refs (nil when there is none).
func FindReference(refs []Reference, n int, c Config) *Reference {
	for i, r := range refs {
		rc := r.Config
		if r.Workload == n && rc.Placement == c.Placement && rc.Queue == c.Queue && rc.Locality == c.Locality &&
			rc.ProfileSeed == c.ProfileSeed && rc.WorkloadSeed == c.WorkloadSeed && rc.TrackStart == c.TrackStart &&
			rc.TrackEnd == c.TrackEnd && rc.Machines == c.Machines && rc.PerMachine == c.PerMachine && c.Profile == nil {
			return &refs[i]
		}
	}
	return nil
}

// Summary is a run's summary file, in the keys of the reference runs'
// NAME.summary.json.
type Summary struct {
	Name        string  `json:"name"`
	Trace       string  `json:"trace"`
	Tracked     [2]int  `json:"tracked_jobs"`
	Jobs        int     `json:"n_jobs"`
	Scheduler   string  `json:"scheduler"`
	Placement   string  `json:"placement"`
	Locality    float64 `json:"locality_penalty"`
	Cluster     string  `json:"cluster"`
	ProfileSeed uint64  `json:"profile_seed"`
	WorkSeed    uint64  `json:"workload_seed"`
	RoundS      float64 `json:"round_s"`
	AvgJCT      float64 `json:"avg_jct_s"`
	P99JCT      float64 `json:"p99_jct_s_artifact"`
	MedianJCT   float64 `json:"median_jct_s"`
	Makespan    float64 `json:"makespan_s"`
	LastFinish  float64 `json:"last_finish_s"`
	Rounds      int     `json:"sim_rounds"`
	Utilisation float64 `json:"gpu_util_mean"`
	Wall        float64 `json:"wall_s"`
}

// NewSummary is r's summary as run name on workload n, taking wall
// seconds.
func NewSummary(name string, n int, r *Result, wall float64) Summary {
	c := r.Config
	return Summary{Name: name, Trace: fmt.Sprintf("workload-%d", n), Tracked: [2]int{c.TrackStart, c.TrackEnd}, Jobs: len(r.Jobs),
		Scheduler: ArtifactQueue(c.Queue), Placement: ArtifactPlacement(c.Placement), Locality: c.Locality,
		Cluster: fmt.Sprintf("%dx%d", c.Machines, c.PerMachine), ProfileSeed: c.ProfileSeed, WorkSeed: c.WorkloadSeed, RoundS: Round,
		AvgJCT: r.AvgJCT, P99JCT: r.P99JCT, MedianJCT: r.MedianJCT, Makespan: r.Makespan, LastFinish: r.LastFinish,
		Rounds: r.Rounds, Utilisation: r.Utilisation, Wall: wall}
}

// ReadSummary reads a run's NAME.summary.json.
func ReadSummary(path string) (Summary, error) {
	var s Summary
	raw, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// WriteRounds writes the run's rounds as JSON lines in the keys of the
// reference runs' NAME.rounds.jsonl, each as the round found the cluster
// (after the completions, before the placement): t, free_gpus,
// jobs_running, jobs_in_queue (here: the jobs arrived and waiting), and
// per running job id its GPUs (alloc), slowest multiplier (pm) and
// locality penalty (loc).
func WriteRounds(w io.Writer, rounds []RoundStat) error {
	enc := json.NewEncoder(w)
	for _, r := range rounds {
		line := struct {
			T       float64            `json:"t"`
			Free    int                `json:"free_gpus"`
			Running int                `json:"jobs_running"`
			Waiting int                `json:"jobs_in_queue"`
			Alloc   map[string][]int   `json:"alloc"`
			PM      map[string]float64 `json:"pm"`
			Loc     map[string]float64 `json:"loc"`
		}{T: r.T, Free: r.Free, Running: len(r.Alloc), Waiting: r.Waiting,
			Alloc: map[string][]int{}, PM: map[string]float64{}, Loc: map[string]float64{}}
		for id, gpus := range r.Alloc {
			k := strconv.Itoa(id)
			line.Alloc[k], line.PM[k], line.Loc[k] = gpus, r.PM[id], r.Loc[id]
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}

// ReadRounds reads a NAME.rounds.jsonl: each round's time and allocation.
func ReadRounds(path string) ([]RoundStat, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []RoundStat
	dec := json.NewDecoder(f)
	for dec.More() {
		var line struct {
			T       float64            `json:"t"`
			Free    int                `json:"free_gpus"`
			Waiting int                `json:"jobs_in_queue"`
			Alloc   map[string][]int   `json:"alloc"`
			PM      map[string]float64 `json:"pm"`
			Loc     map[string]float64 `json:"loc"`
		}
		if err := dec.Decode(&line); err != nil {
			return nil, fmt.Errorf("%s: round %d: %w", path, len(out)+1, err)
		}
		r := RoundStat{T: line.T, Free: line.Free, Waiting: line.Waiting, Alloc: map[int][]int{}, PM: map[int]float64{}, Loc: map[int]float64{}}
		for k, gpus := range line.Alloc {
			id, err := strconv.Atoi(k)
			if err != nil {
				return nil, fmt.Errorf("%s: round %d: job id %q", path, len(out)+1, k)
			}
			r.Alloc[id], r.PM[id], r.Loc[id] = gpus, line.PM[k], line.Loc[k]
		}
		out = append(out, r)
	}
	return out, nil
}
