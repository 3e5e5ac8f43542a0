package sim

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// WriteTable prints the summaries side by side: one column per run, one
// row per measure.
func WriteTable(w io.Writer, sums []Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, cell func(s *Summary) string) {
		fmt.Fprint(tw, label+"\t")
		for i := range sums {
			fmt.Fprint(tw, cell(&sums[i])+"\t")
		}
		fmt.Fprintln(tw)
	}
	row("policy", func(s *Summary) string { return s.Policy })
	row("jobs submitted", func(s *Summary) string { return fmt.Sprint(s.Submitted) })
	row("jobs completed", func(s *Summary) string { return fmt.Sprint(s.Completed) })
	row("jobs rejected / unfinished", func(s *Summary) string { return fmt.Sprintf("%d / %d", s.Rejected, s.Unended) })
	for _, p := range Priorities(sums) {
		row("JCT p50/p95/p99 "+p, func(s *Summary) string {
			d := s.ByPriority[p]
			if d == nil {
				return "-"
			}
			return hours(Percentile(d.JCT, 50)) + " " + hours(Percentile(d.JCT, 95)) + " " + hours(Percentile(d.JCT, 99))
		})
	}
	for _, p := range Priorities(sums) {
		row("queueing p50/p95 "+p, func(s *Summary) string {
			d := s.ByPriority[p]
			if d == nil {
				return "-"
			}
			return hours(Percentile(d.Queue, 50)) + " " + hours(Percentile(d.Queue, 95))
		})
	}
	row("mean utilisation %", func(s *Summary) string { return num(s.UtilMean, 1) })
	row("GPUs idle (mean)", func(s *Summary) string { return num(s.GPUsIdle, 2) })
	row("busy GPU-hours", func(s *Summary) string { return num(s.BusyGPUHours, 1) })
	row("energy kWh", func(s *Summary) string { return num(s.EnergyKWh, 1) })
	row("preemptions", func(s *Summary) string { return fmt.Sprint(s.Preemptions) })
	row("lost work GPU-hours", func(s *Summary) string { return num(s.LostGPUHours, 2) })
	row("fragmentation GPUs mean/max", func(s *Summary) string { return num(s.FragMean, 2) + " " + num(s.FragMax, 2) })
	row("VRAM fragmentation mean/max", func(s *Summary) string { return num(s.VRAMFragMean, 3) + " " + num(s.VRAMFragMax, 3) })
	row("co-location slowdown mean/p95", func(s *Summary) string { return num(s.SlowdownMean, 3) + " " + num(s.SlowdownP95, 3) })
	row("simulated / wall", func(s *Summary) string {
		return s.Length.Round(time.Minute).String() + " / " + s.Wall.Round(time.Millisecond).String()
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
	Policy       string                         `json:"policy"`
	Submitted    int                            `json:"submitted"`
	Completed    int                            `json:"completed"`
	Rejected     int                            `json:"rejected"`
	Unfinished   int                            `json:"unfinished"`
	JCT          map[string]map[string]*float64 `json:"jct_s"`
	Queueing     map[string]map[string]*float64 `json:"queueing_s"`
	UtilMean     *float64                       `json:"util_mean"`
	GPUsIdle     *float64                       `json:"gpus_idle"`
	BusyGPUHours float64                        `json:"busy_gpu_hours"`
	EnergyKWh    float64                        `json:"energy_kwh"`
	Preemptions  int                            `json:"preemptions"`
	LostGPUHours float64                        `json:"lost_gpu_hours"`
	FragMean     *float64                       `json:"frag_gpus_mean"`
	FragMax      *float64                       `json:"frag_gpus_max"`
	VRAMFragMean *float64                       `json:"vram_fragmentation_mean"`
	VRAMFragMax  *float64                       `json:"vram_fragmentation_max"`
	SlowdownMean *float64                       `json:"slowdown_mean"`
	SlowdownP95  *float64                       `json:"slowdown_p95"`
	SimulatedS   float64                        `json:"simulated_s"`
	WallS        float64                        `json:"wall_s"`
}

// JSON converts a summary to its summary.json form.
func (s *Summary) JSON() SummaryJSON {
	out := SummaryJSON{Policy: s.Policy, Submitted: s.Submitted, Completed: s.Completed, Rejected: s.Rejected,
		Unfinished: s.Unended, JCT: map[string]map[string]*float64{}, Queueing: map[string]map[string]*float64{},
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
