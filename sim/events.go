package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpusched/gpusched/events"
)

// maxEventLine bounds one recorded event (a GPU status with many jobs is a
// few KB; the bus's payload limit is 8 MB).
const maxEventLine = 8 << 20

// ReadEvents rebuilds a run's result from recorded events (observer
// record's JSON lines): the jobs from their lifecycle events, the series
// from the metrics events. Times count from the first event's simulated
// time. Lines that are not events are errors naming the line.
func ReadEvents(r io.Reader) (*Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	var c *collector
	var last time.Time
	line := 0
	policy := ""
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var ev events.Decoded
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("line %d: not an event: %v", line, err)
		}
		if ev.Type == "" || ev.SimTime.IsZero() {
			return nil, fmt.Errorf("line %d: not an event (no type or simtime)", line)
		}
		if c == nil {
			c = newCollector(ev.SimTime)
		}
		if ev.SimTime.After(last) {
			last = ev.SimTime
		}
		isMetrics := ev.Type == events.Type("metrics", "cluster")
		if isMetrics {
			var m events.Metrics
			if json.Unmarshal(ev.Data, &m) == nil && m.Policy != "" {
				policy = m.Policy
			}
		}
		if _, isJob := events.JobEventType(ev.Type); isMetrics || isJob {
			c.fold(isMetrics, b)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if c == nil {
		return nil, fmt.Errorf("no events")
	}
	res := &Result{Policy: policy}
	res.Jobs, res.Series = c.results()
	res.Submitted = len(res.Jobs)
	res.Length = last.Sub(c.start)
	return res, nil
}
