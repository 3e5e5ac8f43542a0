package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/replay"
)

// QoSPriority maps an openb pod's qos to the job's priority and whether it
// may be preempted. LS (latency-sensitive services) and Guaranteed pods
// are the cluster's production work: high and never preempted. Burstable
// pods are medium and BE (best-effort) pods low, both preemptible. None of
// them checkpoints, so a preempted pod starts over.
var QoSPriority = map[string]struct {
	Priority    model.Priority
	Preemptible bool
}{
	"LS":         {model.PriorityHigh, false},
	"Guaranteed": {model.PriorityHigh, false},
	"Burstable":  {model.PriorityMedium, true},
	"BE":         {model.PriorityLow, true},
}

// minPodDuration is the run time of a pod whose trace times give none
// (deleted the second it was scheduled).
const minPodDuration = time.Second

// PodArrivals turns openb pods into timed arrivals: each pod arrives at its
// creation_time and runs for deletion_time − scheduled_time (its run time
// in the trace; deletion − creation for a pod the trace never scheduled),
// with its CPU, memory, GPU count and share and allowed models, and the
// priority its qos maps to (QoSPriority). Arrivals are in creation order.
func PodArrivals(pods []openb.Pod) ([]jobgen.Arrival, error) {
	out := make([]jobgen.Arrival, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		if !p.HasTimes {
			return nil, fmt.Errorf("pod %s has no creation and deletion times (the multigpu* files have none): a timed replay needs them", p.Name)
		}
		q, ok := QoSPriority[p.QoS]
		if !ok {
			return nil, fmt.Errorf("pod %s: unknown qos %q (known: LS, Guaranteed, Burstable, BE)", p.Name, p.QoS)
		}
		from := p.Creation
		if p.Scheduled > from {
			from = p.Scheduled
		}
		run := max(time.Duration(p.Deletion-from)*time.Second, minPodDuration)
		spec := replay.Spec(p)
		spec.Duration, spec.Priority, spec.Preemptible, spec.Tenant = run.String(), new(q.Priority), new(q.Preemptible), strings.ToLower(p.QoS)
		body, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, jobgen.Arrival{At: time.Duration(p.Creation) * time.Second, Name: p.Name, Body: body})
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out, nil
}

// ReadJobLines reads a JSON-lines trace: one job spec per line (the
// job.submit body) with one more field, submit_at — seconds from the
// trace's start as a number, or a duration such as "90m". Blank lines and
// lines starting with # are skipped. Every spec is validated as the
// scheduler would; an error names the file, the line and the field.
func ReadJobLines(path string) ([]jobgen.Arrival, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseJobLines(f, path)
}

// ParseJobLines is ReadJobLines over a reader; name labels errors.
func ParseJobLines(r io.Reader, name string) ([]jobgen.Arrival, error) {
	var out []jobgen.Arrival
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		fail := func(field, msg string) error {
			if field == "" {
				return fmt.Errorf("%s:%d: %s", name, line, msg)
			}
			return fmt.Errorf("%s:%d: %s: %s", name, line, field, msg)
		}
		// A line is a submission with its arrival time beside it.
		var arrival struct {
			SubmitAt json.RawMessage `json:"submit_at"`
			events.SubmitRequest
		}
		if fe := events.DecodeStrict(text, &arrival); fe != nil {
			return nil, fail(fe.Field, fe.Message)
		}
		if arrival.SubmitAt == nil {
			return nil, fail("submit_at", "required (seconds from the trace's start, or a duration like \"90m\")")
		}
		offset, err := parseOffset(arrival.SubmitAt)
		if err != nil {
			return nil, fail("submit_at", err.Error())
		}
		spec, fe := arrival.Job()
		if fe != nil {
			return nil, fail(fe.Field, fe.Message)
		}
		body, err := json.Marshal(arrival.SubmitRequest)
		if err != nil {
			return nil, fail("", err.Error())
		}
		out = append(out, jobgen.Arrival{At: offset, Name: spec.Name, Body: body})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no jobs", name)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out, nil
}

func parseOffset(raw json.RawMessage) (time.Duration, error) {
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		if secs < 0 {
			return 0, fmt.Errorf("must not be negative")
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("must be seconds (a number) or a duration string, not %s", raw)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use e.g. \"90m\" or \"1h30m\")", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return d, nil
}
