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
