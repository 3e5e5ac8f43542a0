package pal

import (
	"bufio"
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
