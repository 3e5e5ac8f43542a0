package observer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// TextOptions tune the text view.
type TextOptions struct {
	// Interval between refreshes (wall time).
	Interval time.Duration
	// MaxGPUs is how many GPU lines to show before condensing.
	MaxGPUs int
	// Once renders a single frame without clearing the screen.
	Once bool
}

// Text renders the live text view to out until ctx ends.
func Text(ctx context.Context, nc *nats.Conn, subjects events.Subjects, out io.Writer, opt TextOptions) error {
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.MaxGPUs <= 0 {
		opt.MaxGPUs = 24
	}
	feed := &eventFeed{max: 8}
	sub, err := nc.Subscribe(subjects.AllEvents(), feed.add)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	tick := time.NewTicker(opt.Interval)
	defer tick.Stop()
	for {
		var snap *events.Snapshot
		err := errNotConnected
		if nc.IsConnected() {
			snap, err = fetchSnapshot(nc, subjects)
		}
		var b strings.Builder
		if !opt.Once {
			b.WriteString("\x1b[H\x1b[2J")
		}
		if err != nil {
			fmt.Fprintf(&b, "gpusched observer: waiting for the cluster on %s (%v)\n", strings.Join(nc.Servers(), ", "), err)
		} else {
			Render(&b, snap, feed.snapshot(), opt.MaxGPUs)
		}
		if _, err := io.WriteString(out, b.String()); err != nil {
			return err
		}
		if opt.Once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

var errNotConnected = errors.New("not connected yet, retrying")

func fetchSnapshot(nc *nats.Conn, subjects events.Subjects) (*events.Snapshot, error) {
	msg, err := nc.Request(subjects.ClusterSnapshot(), []byte(`{"page":0}`), 2*time.Second)
	if err != nil {
		return nil, err
	}
	var snap events.Snapshot
	if err := json.Unmarshal(msg.Data, &snap); err != nil {
		return nil, err
	}
	return &snap, nil
}

// eventFeed keeps the latest notable events as one-line summaries.
type eventFeed struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (f *eventFeed) add(m *nats.Msg) {
	if events.Redelivered(m) {
		return // a JetStream delivery someone pulled onto the live subjects: no event
	}
	line := Summarize(m.Data)
	if line == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, line)
	if len(f.lines) > f.max {
		f.lines = f.lines[len(f.lines)-f.max:]
	}
}

func (f *eventFeed) snapshot() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

// Summarize turns an event into one readable line, or "" for events too
// frequent to list (status, heartbeats, metrics).
func Summarize(data []byte) string {
	var ev events.Decoded
	if json.Unmarshal(data, &ev) != nil {
		return ""
	}
	line, _ := summarize(&ev)
	return line
}

// summarize is Summarize on a decoded event; kind is the family of the
// line ("job", "policy", "gpu") for a dashboard to colour it.
func summarize(ev *events.Decoded) (line, kind string) {
	t := ev.SimTime.Format("Jan 2 15:04")
	jobTyp, isJob := events.JobEventType(ev.Type)
	switch {
	case isJob:
		var j events.JobInfo
		json.Unmarshal(ev.Data, &j)
		typ := jobTyp
		switch typ {
		case events.JobSubmitted, events.JobQueued:
			return "", ""
		case events.JobStarted:
			return fmt.Sprintf("%s  %-9s %s on %s", t, typ, j.Name, strings.Join(j.GPUIDs, ",")), typ
		case events.JobPreempted:
			return fmt.Sprintf("%s  %-9s %s (%s), kept %s of work", t, typ, j.Name, j.Reason, fmtWork(j.ProgressS)), typ
		case events.JobRejected, events.JobLost:
			return fmt.Sprintf("%s  %-9s %s: %s", t, typ, j.Name, j.Reason), typ
		case events.JobPlaced:
			if len(j.Victims) > 0 {
				return fmt.Sprintf("%s  %-9s %s on %s, preempting %d job(s)", t, typ, j.Name, strings.Join(j.GPUIDs, ","), len(j.Victims)), typ
			}
			return "", ""
		}
		return fmt.Sprintf("%s  %-9s %s", t, typ, j.Name), typ
	case ev.Type == events.Type("sched", events.SchedPolicy):
		var p events.PolicyChanged
		json.Unmarshal(ev.Data, &p)
		// What this change switched: the policy, the queue order, the
		// filters, the oversubscription ratio. The first names the line.
		type part struct{ word, change string }
		var parts []part
		if p.Previous != "" {
			parts = append(parts, part{"policy", p.Previous + " → " + p.Policy})
		}
		if p.PreviousQueue != "" {
			parts = append(parts, part{"queue", p.PreviousQueue + " → " + p.Queue})
		}
		if p.PreviousFilters != "" {
			parts = append(parts, part{"filters", p.PreviousFilters + " → " + cmp.Or(p.Filters, "none")})
		}
		if p.PreviousOversubscribe != nil {
			parts = append(parts, part{"oversubscribe", "×" + ratioWords(*p.PreviousOversubscribe) + " → ×" + ratioWords(p.Oversubscribe)})
		}
		if len(parts) == 0 {
			parts = append(parts, part{"policy", p.Policy})
		}
		line := fmt.Sprintf("%s  %-9s %s", t, parts[0].word, parts[0].change)
		for _, more := range parts[1:] {
			line += ", " + more.word + " " + more.change
		}
		return line, "policy"
	case ev.Type == events.Type("gpu", events.GPUOOM):
		var o events.GPUOOMEvent
		json.Unmarshal(ev.Data, &o)
		return fmt.Sprintf("%s  refused   %s on %s: %s", t, o.JobID[:min(8, len(o.JobID))], o.GPU, o.Reason), "refused"
	case ev.Type == events.Type("gpu", events.GPUDown):
		var st events.GPUStatus
		json.Unmarshal(ev.Data, &st)
		return fmt.Sprintf("%s  down      %s (%s), %d job(s) lost", t, ev.Subject, st.Reason, len(st.Jobs)), "down"
	case ev.Type == events.Type("security", events.NodeCutOff):
		var b events.NodeBudget
		json.Unmarshal(ev.Data, &b)
		return fmt.Sprintf("%s  cut off   node %s: past its event budget %s; shut out until %s (cut %d)", t, b.Node, b.Budget,
			b.Until.Local().Format("15:04:05"), b.Cuts), "down"
	case ev.Type == events.Type("security", events.NodeReadmitted):
		var b events.NodeBudget
		json.Unmarshal(ev.Data, &b)
		return fmt.Sprintf("%s  readmitted node %s after its cool-off", t, b.Node), "up"
	case ev.Type == events.Type("gpu", events.GPUUp):
		var st events.GPUStatus
		json.Unmarshal(ev.Data, &st)
		return fmt.Sprintf("%s  up        %s (incarnation %d)", t, ev.Subject, st.Incarnation), "up"
	}
	return "", ""
}

func fmtWork(s float64) string {
	return (time.Duration(s) * time.Second).Round(time.Minute).String()
}

func bar(frac float64, width int) string {
	frac = min(max(frac, 0), 1)
	n := int(frac*float64(width) + 0.5)
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}

// gb writes a size in GB, the one unit of memory on screen (model.GB).
func gb(b int64) string { return model.Bytes(b).GBNumber() }

// Count is n things, the noun in the plural unless n is 1 ("1 GPU",
// "8 GPUs").
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Render writes one frame of the text view.
func Render(w io.Writer, snap *events.Snapshot, log []string, maxGPUs int) {
	s := snap.Summary
	fmt.Fprintf(w, "gpusched · policy %s · sim %s · %s, %d busy · util %.0f%% · VRAM %s/%s GB\n",
		snap.Policy, snap.SimTime.Format("2006-01-02 15:04"), Count(s.GPUs, "GPU"), s.GPUsBusy, s.UtilMean, gb(s.VRAMUsed), gb(s.VRAMTotal))
	fmt.Fprintf(w, "queue %d · running %d · done %d · preemptions %d · fragmented %s GB · %.0f W · %.2f kWh\n\n",
		s.JobsQueued, s.JobsRunning, s.JobsCompleted, s.Preemptions, gb(s.FragmentedVRAM), s.PowerW, s.EnergyKWh)
	names := JobNames(snap)
	fmt.Fprintf(w, "%-8s %-10s %-7s %-17s %-26s %s\n", "GPU", "MODEL", "NODE", "UTIL", "VRAM GB", "JOBS")
	for i, g := range snap.GPUs {
		if i == maxGPUs {
			fmt.Fprintf(w, "… %d more GPUs\n", s.GPUs-maxGPUs)
			break
		}
		jobs := JobsOn(g, names)
		state := ""
		switch {
		case g.Unknown:
			state = " unknown yet (not read since the scheduler started)"
		case !g.Alive:
			state = " DOWN"
		}
		fmt.Fprintf(w, "%-8s %-10s %-7s %s %4.0f%% %s %5s/%-5s %s%s\n", g.GPU, g.Model, g.Node,
			bar(g.Util/100, 10), g.Util, bar(float64(g.VRAMUsed)/float64(max(g.VRAMTotal, 1)), 10),
			gb(g.VRAMUsed), gb(g.VRAMTotal), strings.Join(jobs, ", "), state)
	}
	fmt.Fprintf(w, "\nRUNNING JOBS\n%-22s %-6s %8s %5s %9s %9s  %s\n", "JOB", "PRIO", "VRAM", "UTIL", "DURATION", "PROGRESS", "GPU")
	for _, j := range snap.Running {
		pct := 0.0
		if j.WorkS > 0 {
			pct = 100 * j.ProgressS / j.WorkS
		}
		progress := fmt.Sprintf("%8.0f%%", pct)
		if j.TrainingState != nil {
			// Its progress is in its application's steps, not seconds.
			progress = fmt.Sprintf("%9s", "epoch "+strconv.Itoa(j.TrainingState.Epoch))
		}
		fmt.Fprintf(w, "%-22s %-6s %8s %4.0f%% %9s %s  %s\n", trunc(j.Name, 22), j.Priority, JobVRAM(j),
			j.Util, JobDuration(j), progress, strings.Join(j.GPUIDs, ","))
	}
	fmt.Fprintf(w, "\nQUEUE (%d)\n", s.JobsQueued)
	for i, j := range snap.Queue {
		if i == 10 {
			fmt.Fprintf(w, "… %d more\n", s.JobsQueued-10)
			break
		}
		wait := snap.SimTime.Sub(j.SubmittedAt).Round(time.Minute)
		fmt.Fprintf(w, "%-22s %-6s %8s %4.0f%%  waiting %-7s %s\n", trunc(j.Name, 22), j.Priority, JobVRAM(j),
			j.Util, wait, j.Reason)
	}
	if len(log) > 0 {
		fmt.Fprintf(w, "\nEVENTS\n")
		for _, l := range log {
			fmt.Fprintln(w, l)
		}
	}
}

// JobVRAM is a job's VRAM as the views show it: a training job's
// replicas each take a whole GPU ("8×GPU"), whatever its VRAM.
func JobVRAM(j events.JobInfo) string {
	if j.Training != nil {
		return strconv.Itoa(j.Training.Replicas) + "×GPU"
	}
	return model.Bytes(j.VRAM).GBString()
}

// JobDuration is a job's duration as the views show it: a training job
// has none (its application's model says when it completes), so its
// application's name.
func JobDuration(j events.JobInfo) string {
	if j.Training != nil {
		return trunc(j.Training.App, 9)
	}
	return j.Duration
}

// JobNames maps job id → name for the snapshot's running jobs.
func JobNames(s *events.Snapshot) map[string]string {
	names := make(map[string]string, len(s.Running))
	for _, j := range s.Running {
		names[j.JobID] = j.Name
	}
	return names
}

// JobsOn names the jobs holding VRAM on g, in address order; a job not in
// names (reserved, not yet running) shows the start of its id.
func JobsOn(g events.SnapshotGPU, names map[string]string) []string {
	var jobs []string
	for _, a := range g.Allocs {
		n := names[a.Owner]
		if n == "" {
			n = a.Owner[:min(8, len(a.Owner))]
		}
		jobs = append(jobs, n)
	}
	return jobs
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// ratioWords writes an oversubscription ratio ("1", "1.5", "inf").
func ratioWords(r events.Ratio) string {
	b, _ := r.MarshalJSON()
	return strings.Trim(string(b), `"`)
}
