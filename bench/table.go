package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of the table: what was measured, the figure, the
// target it is held to (empty: reported only) and whether it met it.
type Row struct {
	Section string
	Case    string
	Figure  string
	Target  string
	Verdict string
}

// Table is a bench run's result.
type Table struct {
	Rows    []Row
	Machine string
	Took    time.Duration
}

// add appends a row; met is nil for a figure with no target.
func (t *Table) add(section, what, figure, target string, met *bool) {
	v := ""
	if met != nil {
		v = "met"
		if !*met {
			v = "MISSED"
		}
	}
	t.Rows = append(t.Rows, Row{Section: section, Case: what, Figure: figure, Target: target, Verdict: v})
}

// skip records a measure that could not run here, and why.
func (t *Table) skip(section, what, why string) {
	t.Rows = append(t.Rows, Row{Section: section, Case: what, Figure: "skipped: " + why})
}

func ok(b bool) *bool { return &b }

// Print writes the table, the machine it ran on and how long it took.
func (t *Table) Print(w io.Writer) {
	fmt.Fprintf(w, "gpusched bench on %s (%s)\n\n", t.Machine, t.Took.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SECTION\tCASE\tFIGURE\tTARGET\t")
	last := ""
	for _, r := range t.Rows {
		sec := r.Section
		if sec == last {
			sec = ""
		}
		last = r.Section
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sec, r.Case, r.Figure, r.Target, r.Verdict)
	}
	tw.Flush()
}

// PrintNarrow writes the table for a terminal width cells wide: a block
// per row under its section — the case, then its figure and its target
// with the verdict on lines of their own, wrapped — where Print's one
// line a row can run to hundreds of columns.
func (t *Table) PrintNarrow(w io.Writer, width int) {
	width = max(width, 40)
	fmt.Fprintf(w, "gpusched bench on %s (%s)\n", t.Machine, t.Took.Round(time.Second))
	last := ""
	for _, r := range t.Rows {
		if r.Section != last {
			fmt.Fprintf(w, "\n%s\n", r.Section)
			last = r.Section
		}
		writeWrapped(w, "  ", "  ", r.Case, width)
		writeWrapped(w, "      ", "      ", r.Figure, width)
		if r.Target != "" {
			target := "target: " + r.Target
			if r.Verdict != "" {
				target += " — " + r.Verdict
			}
			writeWrapped(w, "      ", "        ", target, width)
		}
	}
}

// writeWrapped writes text in lines of at most width cells at spaces,
// the first line after first, the others after rest.
func writeWrapped(w io.Writer, first, rest, text string, width int) {
	line := first
	blank := true
	for _, word := range strings.Fields(text) {
		if !blank && len([]rune(line))+1+len([]rune(word)) > width {
			fmt.Fprintln(w, line)
			line, blank = rest, true
		}
		if !blank {
			line += " "
		}
		line += word
		blank = false
	}
	fmt.Fprintln(w, line)
}

// machine names this machine: CPU model, cores, memory, OS and Go.
func machine() string {
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, found := strings.Cut(l, ":"); found && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.1f GiB", float64(kb)/(1<<20))
		}
	}
	if cpu == "" {
		cpu = runtime.GOARCH
	}
	return fmt.Sprintf("%s, %d cores%s, %s, %s", cpu, runtime.NumCPU(), mem, runtime.GOOS, runtime.Version())
}

// Durations formatted for the table.
func us(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1e3)
	}
	return d.Round(time.Millisecond).String()
}

// thousands writes n with thousands separators.
func thousands(n float64) string {
	s := fmt.Sprintf("%.0f", n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
