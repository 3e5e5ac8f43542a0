package sim

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints the summaries side by side: one column per run, one
// row per measure.
func WriteTable(w io.Writer, sums []Summary) error {
	cols := make([]Column, len(sums))
	for i := range sums {
		cols[i] = Column{Policy: sums[i].Policy, Runs: sums[i : i+1]}
	}
	return WriteColumns(w, cols)
}

// Column is one column of a table: a policy's runs (one per seed). Each
// cell is the mean over the runs of the measure (percentiles: the mean of
// each run's percentile).
type Column struct {
	Policy string
	Runs   []Summary
}

// WriteColumns prints one column per policy, one row per measure.
func WriteColumns(w io.Writer, cols []Column) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	var all []Summary
	for _, c := range cols {
		all = append(all, c.Runs...)
	}
	mean := func(c *Column, f func(*Summary) float64) float64 {
		var sum float64
		n := 0
		for i := range c.Runs {
			if x := f(&c.Runs[i]); !math.IsNaN(x) {
				sum += x
				n++
			}
		}
		if n == 0 {
			return math.NaN()
		}
		return sum / float64(n)
	}
	// row prints label, then for each column the means of fs, formatted
	// by format and joined by sep ("-" when none is measured).
	row := func(label, sep string, format func(float64) string, fs ...func(*Summary) float64) {
		fmt.Fprint(tw, label+"\t")
		for i := range cols {
			cells := make([]string, len(fs))
			measured := false
			for k, f := range fs {
				x := mean(&cols[i], f)
				measured = measured || !math.IsNaN(x)
				cells[k] = "-"
				if !math.IsNaN(x) {
					cells[k] = format(x)
				}
			}
			cell := "-"
			if measured {
				cell = strings.Join(cells, sep)
			}
			fmt.Fprint(tw, cell+"\t")
		}
		fmt.Fprintln(tw)
	}
	count := func(x float64) string { return num(x, 0) }
	for _, c := range cols {
		if len(c.Runs) > 1 {
			count = func(x float64) string { return num(x, 1) }
		}
	}
	digits := func(d int) func(float64) string { return func(x float64) string { return num(x, d) } }
	fmt.Fprint(tw, "policy\t")
	for _, c := range cols {
		fmt.Fprint(tw, c.Policy+"\t")
	}
	fmt.Fprintln(tw)
	row("jobs submitted", "", count, func(s *Summary) float64 { return float64(s.Submitted) })
	row("jobs completed", "", count, func(s *Summary) float64 { return float64(s.Completed) })
	row("jobs rejected / unfinished", " / ", count, func(s *Summary) float64 { return float64(s.Rejected) },
		func(s *Summary) float64 { return float64(s.Unended) })
	priorities := Priorities(all)
	pct := func(p string, q float64, jct bool) func(*Summary) float64 {
		return func(s *Summary) float64 {
			d := s.ByPriority[p]
			if d == nil {
				return math.NaN()
			}
			if jct {
				return Percentile(d.JCT, q)
			}
			return Percentile(d.Queue, q)
		}
	}
	for _, p := range priorities {
		row("JCT p50/p95/p99 "+p, " ", hours, pct(p, 50, true), pct(p, 95, true), pct(p, 99, true))
	}
	for _, p := range priorities {
		row("queueing p50/p95 "+p, " ", hours, pct(p, 50, false), pct(p, 95, false))
	}
	row("mean utilisation %", "", digits(1), func(s *Summary) float64 { return s.UtilMean })
	row("GPUs idle (mean)", "", digits(2), func(s *Summary) float64 { return s.GPUsIdle })
	row("busy GPU-hours", "", digits(1), func(s *Summary) float64 { return s.BusyGPUHours })
	row("energy kWh", "", digits(1), func(s *Summary) float64 { return s.EnergyKWh })
	row("preemptions", "", count, func(s *Summary) float64 { return float64(s.Preemptions) })
	row("lost work GPU-hours", "", digits(2), func(s *Summary) float64 { return s.LostGPUHours })
	faults := false
	for _, s := range all {
		faults = faults || s.Faults > 0
	}
	if faults {
		// Only with faults (chaos): a table without keeps its rows.
		row("faults / jobs re-queued", " / ", count, func(s *Summary) float64 { return float64(s.Faults) },
			func(s *Summary) float64 { return float64(s.Requeued) })
		row("work lost to faults GPU-hours", "", digits(2), func(s *Summary) float64 { return s.FaultGPUHours })
		dur := func(x float64) string {
			d := time.Duration(x * float64(time.Second))
			if d < time.Minute {
				return d.Round(time.Millisecond).String() // a restart's backoff is 100 ms
			}
			return d.Round(time.Second).String()
		}
		row("fault → jobs running again mean/max", " ", dur, func(s *Summary) float64 { return s.RecoveryMean.Seconds() },
			func(s *Summary) float64 { return s.RecoveryMax.Seconds() })
	}
	lostWith := false
	for _, s := range all {
		lostWith = lostWith || s.LostWithScheduler > 0
	}
	if lostWith {
		// Counted among the unfinished, named apart: a virtual run's
		// scheduler has no journal, so a kill-scheduler fault loses its
		// queue (docs/CHAOS.md).
		row("unfinished: lost with a scheduler", "", count, func(s *Summary) float64 { return float64(s.LostWithScheduler) })
	}
	row("fragmentation GPUs mean/max", " ", digits(2), func(s *Summary) float64 { return s.FragMean },
		func(s *Summary) float64 { return s.FragMax })
	row("VRAM fragmentation mean/max", " ", digits(3), func(s *Summary) float64 { return s.VRAMFragMean },
		func(s *Summary) float64 { return s.VRAMFragMax })
	row("co-location slowdown mean/p95", " ", digits(3), func(s *Summary) float64 { return s.SlowdownMean },
		func(s *Summary) float64 { return s.SlowdownP95 })
	row("simulated / wall", " / ", func(x float64) string {
		if x >= 60 {
			return time.Duration(x * float64(time.Second)).Round(time.Minute).String()
		}
		return time.Duration(x * float64(time.Second)).Round(time.Millisecond).String()
	}, func(s *Summary) float64 { return s.Length.Seconds() }, func(s *Summary) float64 {
		if s.Wall == 0 {
			return math.NaN() // a recording: no wall time of a run to say
		}
		return s.Wall.Seconds()
	})
	return tw.Flush()
}

func num(x float64, digits int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.*f", digits, x)
}

// hours prints seconds as hours with two decimals ("-" when NaN).
func hours(sec float64) string {
	if math.IsNaN(sec) {
		return "-"
	}
	return fmt.Sprintf("%.2fh", sec/3600)
}

// SummaryJSON is a run's summary as summary.json has it, for tools that
// plot or compare runs: the table's figures, unrounded (null when there is
// nothing to measure, e.g. no completed job of a priority).
type SummaryJSON struct {
	Policy     string `json:"policy"`
	Seed       uint64 `json:"seed"`
	Submitted  int    `json:"submitted"`
	Completed  int    `json:"completed"`
	Rejected   int    `json:"rejected"`
	Unfinished int    `json:"unfinished"`
	// LostWithScheduler is how many of the unfinished a killed scheduler
	// without a journal took with it.
	LostWithScheduler int                            `json:"lost_with_scheduler"`
	JCT               map[string]map[string]*float64 `json:"jct_s"`
	Queueing          map[string]map[string]*float64 `json:"queueing_s"`
	UtilMean          *float64                       `json:"util_mean"`
	GPUsIdle          *float64                       `json:"gpus_idle"`
	BusyGPUHours      float64                        `json:"busy_gpu_hours"`
	EnergyKWh         float64                        `json:"energy_kwh"`
	Preemptions       int                            `json:"preemptions"`
	LostGPUHours      float64                        `json:"lost_gpu_hours"`
	FragMean          *float64                       `json:"frag_gpus_mean"`
	FragMax           *float64                       `json:"frag_gpus_max"`
	VRAMFragMean      *float64                       `json:"vram_fragmentation_mean"`
	VRAMFragMax       *float64                       `json:"vram_fragmentation_max"`
	SlowdownMean      *float64                       `json:"slowdown_mean"`
	SlowdownP95       *float64                       `json:"slowdown_p95"`
	SimulatedS        float64                        `json:"simulated_s"`
	WallS             float64                        `json:"wall_s"`
}

// JSON converts a summary to its summary.json form.
func (s *Summary) JSON() SummaryJSON {
	out := SummaryJSON{Policy: s.Policy, Seed: s.Seed, Submitted: s.Submitted, Completed: s.Completed, Rejected: s.Rejected,
		Unfinished: s.Unended, LostWithScheduler: s.LostWithScheduler, JCT: map[string]map[string]*float64{}, Queueing: map[string]map[string]*float64{},
		UtilMean: finite(s.UtilMean), GPUsIdle: finite(s.GPUsIdle), BusyGPUHours: s.BusyGPUHours,
		EnergyKWh: s.EnergyKWh, Preemptions: s.Preemptions, LostGPUHours: s.LostGPUHours,
		FragMean: finite(s.FragMean), FragMax: finite(s.FragMax), VRAMFragMean: finite(s.VRAMFragMean),
		VRAMFragMax: finite(s.VRAMFragMax), SlowdownMean: finite(s.SlowdownMean), SlowdownP95: finite(s.SlowdownP95),
		SimulatedS: s.Length.Seconds(), WallS: s.Wall.Seconds()}
	for p, d := range s.ByPriority {
		out.JCT[p] = map[string]*float64{"p50": finite(Percentile(d.JCT, 50)), "p95": finite(Percentile(d.JCT, 95)),
			"p99": finite(Percentile(d.JCT, 99))}
		out.Queueing[p] = map[string]*float64{"p50": finite(Percentile(d.Queue, 50)), "p95": finite(Percentile(d.Queue, 95))}
	}
	return out
}

func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
