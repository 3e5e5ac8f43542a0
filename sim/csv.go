package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// JobColumns is the header of the per-job CSV: the columns the issue
// names first (job, priority, submit, start, end, gpus, preemptions,
// slowdown), then more. Times are simulated seconds from the run's start;
// start is the job's first start; gpus lists the GPU ids it last ran on,
// separated by spaces; empty cells mean "never" (a job that never started
// or ended).
var JobColumns = []string{"job", "priority", "submit", "start", "end", "gpus", "preemptions", "slowdown",
	"name", "tenant", "state", "node", "gpu_count", "jct_s", "queue_s", "run_s", "work_s", "lost_work_s", "lost", "fault_lost_work_s"}

// olderJobColumns is how many columns per-job CSVs had before lost and
// fault_lost_work_s: such files still read (those two as zero).
const olderJobColumns = 18

// WriteJobs writes the per-job CSV.
func WriteJobs(w io.Writer, jobs []JobResult) error {
	cw := csv.NewWriter(w)
	cw.Write(JobColumns)
	for i := range jobs {
		j := &jobs[i]
		start, end, jct, queue := "", "", "", ""
		if j.Started {
			start, queue = secs(j.Start), secs(j.QueueDelay())
		}
		if j.Ended {
			end = secs(j.End)
			if j.Completed() {
				jct = secs(j.JCT())
			}
		}
		cw.Write([]string{j.Job, j.Priority, secs(j.Submit), start, end, strings.Join(j.GPUs, " "),
			strconv.Itoa(j.Preemptions), strconv.FormatFloat(j.Slowdown, 'f', 4, 64),
			j.Name, j.Tenant, j.State, j.Node, strconv.Itoa(j.GPUCount), jct, queue,
			secs(j.RunS), secs(j.WorkS), secs(j.LostWorkS), strconv.Itoa(j.Lost), secs(j.FaultLostWorkS)})
	}
	cw.Flush()
	return cw.Error()
}

func secs(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// FaultColumns is the header of the per-run faults CSV: one row per fault
// (the jobs lost at one instant): when (simulated seconds), how many jobs
// it took down, the work they lost (GPU-seconds at reference speed), how
// many ran again and how long until the last of them did.
var FaultColumns = []string{"at_s", "jobs_lost", "work_lost_gpu_s", "jobs_running_again", "all_running_again_s"}

// WriteFaults writes a run's faults CSV.
func WriteFaults(w io.Writer, faults []FaultCost) error {
	cw := csv.NewWriter(w)
	cw.Write(FaultColumns)
	for _, f := range faults {
		cw.Write([]string{secs(f.AtS), strconv.Itoa(f.Jobs), secs(f.WorkGPUS), strconv.Itoa(f.Recovered), secs(f.RecoveredS)})
	}
	cw.Flush()
	return cw.Error()
}

// SeriesColumns is the header of the per-run time series CSV: t_s is
// simulated seconds from the run's start; the rest are the cluster's
// metrics at that instant (evt.metrics fields).
var SeriesColumns = []string{"t_s", "util_mean", "gpus", "gpus_busy", "gpus_idle", "power_w", "energy_kwh",
	"jobs_queued", "jobs_running", "jobs_completed", "preemptions", "allocation", "frag_gpus", "frag_ratio",
	"vram_fragmentation"}

// WriteSeries writes a run's time series CSV.
func WriteSeries(w io.Writer, series []Sample) error {
	cw := csv.NewWriter(w)
	cw.Write(SeriesColumns)
	f := func(x float64, d int) string { return strconv.FormatFloat(x, 'f', d, 64) }
	for _, s := range series {
		cw.Write([]string{secs(s.T), f(s.UtilMean, 3), strconv.Itoa(s.GPUs), strconv.Itoa(s.GPUsBusy),
			strconv.Itoa(s.GPUs - s.GPUsBusy), f(s.PowerW, 1), f(s.EnergyKWh, 4), strconv.Itoa(s.JobsQueued),
			strconv.Itoa(s.JobsRunning), strconv.Itoa(s.JobsCompleted), strconv.Itoa(s.Preemptions),
			f(s.Allocation, 5), f(s.FragAmount, 4), f(s.FragRatio, 5), f(s.VRAMFragmentation, 5)})
	}
	cw.Flush()
	return cw.Error()
}

// ReadJobs reads a per-job CSV written by WriteJobs, naming the line and
// column of a bad cell.
func ReadJobs(r io.Reader) ([]JobResult, error) {
	cr := csv.NewReader(r)
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || (strings.Join(rows[0], ",") != strings.Join(JobColumns, ",") &&
		strings.Join(rows[0], ",") != strings.Join(JobColumns[:olderJobColumns], ",")) {
		return nil, fmt.Errorf("line 1: the header is not %s", strings.Join(JobColumns, ","))
	}
	var out []JobResult
	for i, row := range rows[1:] {
		line := i + 2
		num := func(col int) (float64, bool, error) {
			if row[col] == "" {
				return 0, false, nil
			}
			x, err := strconv.ParseFloat(row[col], 64)
			if err != nil {
				return 0, false, fmt.Errorf("line %d, column %s: %q is not a number", line, JobColumns[col], row[col])
			}
			return x, true, nil
		}
		j := JobResult{Job: row[0], Priority: row[1], Name: row[8], Tenant: row[9], State: row[10], Node: row[11]}
		if row[5] != "" {
			j.GPUs = strings.Split(row[5], " ")
		}
		var errs [8]error
		j.Submit, _, errs[0] = num(2)
		j.Start, j.Started, errs[1] = num(3)
		j.End, j.Ended, errs[2] = num(4)
		var pre, count float64
		pre, _, errs[3] = num(6)
		j.Slowdown, _, errs[4] = num(7)
		count, _, errs[5] = num(12)
		j.RunS, _, errs[6] = num(15)
		j.WorkS, _, errs[7] = num(16)
		for _, e := range errs {
			if e != nil {
				return nil, e
			}
		}
		lost, _, err := num(17)
		if err != nil {
			return nil, err
		}
		j.Preemptions, j.GPUCount, j.LostWorkS = int(pre), int(count), lost
		if len(row) > olderJobColumns {
			times, _, err := num(18)
			if err != nil {
				return nil, err
			}
			if j.FaultLostWorkS, _, err = num(19); err != nil {
				return nil, err
			}
			j.Lost = int(times)
		}
		out = append(out, j)
	}
	return out, nil
}

// ReadSeries reads a time series CSV written by WriteSeries, naming the
// line and column of a bad cell.
func ReadSeries(r io.Reader) ([]Sample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(SeriesColumns, ",") {
		return nil, fmt.Errorf("line 1: the header is not %s", strings.Join(SeriesColumns, ","))
	}
	out := make([]Sample, 0, len(rows)-1)
	for i, row := range rows[1:] {
		v := make([]float64, len(row))
		for c, cell := range row {
			x, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d, column %s: %q is not a number", i+2, SeriesColumns[c], cell)
			}
			v[c] = x
		}
		var s Sample
		s.T, s.UtilMean, s.GPUs, s.GPUsBusy = v[0], v[1], int(v[2]), int(v[3])
		s.PowerW, s.EnergyKWh, s.JobsQueued, s.JobsRunning = v[5], v[6], int(v[7]), int(v[8])
		s.JobsCompleted, s.Preemptions, s.Allocation, s.FragAmount = int(v[9]), int(v[10]), v[11], v[12]
		s.FragRatio, s.VRAMFragmentation = v[13], v[14]
		out = append(out, s)
	}
	return out, nil
}
