package observer

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// JobText is a job in sentences, as `cluster get` prints it: where it
// is and how far along, what it asked for, and its history with
// simulated times.
func JobText(j events.JobInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (id %s) is %s", j.Name, j.JobID, j.State)
	switch j.State {
	case events.JobRunning, events.JobPlaced:
		fmt.Fprintf(&b, " on %s", strings.Join(j.GPUIDs, ", "))
		if j.Node != "" {
			fmt.Fprintf(&b, " (%s)", j.Node)
		}
		if j.StartedAt != nil {
			fmt.Fprintf(&b, " since %s", clock(*j.StartedAt))
		}
	case events.JobQueued:
		if j.Reason != "" {
			fmt.Fprintf(&b, ": %s", j.Reason)
		}
	default:
		if j.EndedAt != nil {
			fmt.Fprintf(&b, " at %s, %s after its submission", clock(*j.EndedAt), j.EndedAt.Sub(j.SubmittedAt).Round(time.Second))
		}
		if j.Reason != "" {
			fmt.Fprintf(&b, " (%s)", j.Reason)
		}
	}
	b.WriteString(".\n")
	if j.WorkS > 0 {
		unit := " s of work"
		if j.JobType != "" {
			unit = " steps"
		}
		fmt.Fprintf(&b, "%.0f %% done (%s of %s%s)", 100*j.ProgressS/j.WorkS, fmtNumber(j.ProgressS), fmtNumber(j.WorkS), unit)
		if j.Preemptions > 0 {
			fmt.Fprintf(&b, ", preempted %s, %s lost", times(j.Preemptions), (time.Duration(j.LostWorkS) * time.Second).String())
		}
		b.WriteString(".\n")
	}
	asked := []string{"priority " + j.Priority.String(), "tenant " + j.Tenant, Count(j.GPUs, "GPU")}
	if j.Training != nil {
		asked = append(asked, fmt.Sprintf("training %s, batch %d, %d replicas", j.Training.App, j.Training.Batch, j.Training.Replicas))
	} else {
		asked = append(asked, JobVRAM(j)+" VRAM each", fmt.Sprintf("util %.0f %%", j.Util))
		if j.JobType != "" {
			asked = append(asked, fmt.Sprintf("%s, %s steps", j.JobType, fmtNumber(j.Steps)))
		} else if j.Duration != "" {
			asked = append(asked, "runs "+j.Duration)
		}
		if j.Checkpoint != "" {
			asked = append(asked, "checkpoint every "+j.Checkpoint)
		}
	}
	if j.CPU > 0 || j.Memory > 0 {
		asked = append(asked, fmt.Sprintf("%g CPU cores, %s memory", j.CPU, model.Bytes(j.Memory).GBString()))
	}
	fmt.Fprintf(&b, "asked for: %s.\n", strings.Join(asked, " · "))
	if len(j.History) > 0 {
		b.WriteString("history (simulated time):\n")
		for _, h := range j.History {
			fmt.Fprintf(&b, "  %s  %s", clock(h.SimTime), h.State)
			if h.Reason != "" {
				fmt.Fprintf(&b, ": %s", h.Reason)
			}
			b.WriteString("\n")
		}
		if j.HistoryDropped > 0 {
			fmt.Fprintf(&b, "  (%s of its history left out)\n", Count(j.HistoryDropped, "transition"))
		}
	}
	return b.String()
}

// ExplainText is a scheduling decision in sentences, as `cluster
// explain` prints it and the web page's Why panel shows it: why the job
// waits, or where it went, which other places were weighed and how, and
// what it preempted.
func ExplainText(name string, d events.Decision) string {
	var b strings.Builder
	switch {
	case d.State == events.JobQueued || (len(d.GPUs) == 0 && d.Node == ""):
		fmt.Fprintf(&b, "%s waits", name)
		if d.Reason != "" {
			fmt.Fprintf(&b, ": %s", d.Reason)
		}
		b.WriteString(".\n")
	case d.Pinned != "":
		fmt.Fprintf(&b, "%s was %s.\n", name, PinNote(d))
	default:
		fmt.Fprintf(&b, "%s was placed by %s on %s", name, d.Policy, strings.Join(d.GPUs, ", "))
		if d.Node != "" {
			fmt.Fprintf(&b, " (%s)", d.Node)
		}
		b.WriteString(".\n")
	}
	if len(d.Candidates) > 0 && d.Pinned == "" {
		b.WriteString("places weighed, best first:\n")
		for _, c := range d.Candidates {
			fmt.Fprintf(&b, "  %s on %s  score %.1f", strings.Join(c.GPUs, "+"), c.Node, c.Score)
			if c.Ranked != "" {
				fmt.Fprintf(&b, "  (%s)", c.Ranked)
			}
			b.WriteString("\n")
		}
	}
	if len(d.Victims) > 0 {
		fmt.Fprintf(&b, "it preempted %s.\n", strings.Join(d.Victims, ", "))
	}
	if len(d.Refusals) > 0 {
		fmt.Fprintf(&b, "GPUs refused it first: %s.\n", strings.Join(d.Refusals, "; "))
	}
	return b.String()
}

// clock is a simulated time as the texts write it.
func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

// fmtNumber writes a count of seconds or steps without needless digits.
func fmtNumber(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
