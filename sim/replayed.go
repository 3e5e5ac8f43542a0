package sim

import (
	"fmt"
	"strconv"
	"sync"
)

// missedTasks collects what core.ReplayConfig.Missed reports during a
// replayed run (from the scheduler's goroutine): the tasks the cluster
// did not run as their rounds said.
type missedTasks struct {
	mu   sync.Mutex
	what []string
}

// add is core.ReplayConfig.Missed.
func (m *missedTasks) add(job string, atS float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.what = append(m.what, fmt.Sprintf("%s at %.3f s", job, atS))
}

// check is the run's verdict once it has ended: an error when a task was
// missed (the live run is then not the offline one) or when the driver
// is not done (stopped before every measured job completed, at length).
func (m *missedTasks) check(done bool, length fmt.Stringer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.what) > 0 {
		return fmt.Errorf("%d tasks did not run on the cluster as their rounds said (first: %s): the live run is not the offline one", len(m.what), m.what[0])
	}
	if !done {
		return fmt.Errorf("the live run stopped at %s simulated before every measured job completed", length)
	}
	return nil
}

// replayedJobs are a run's job results by the name a replayed source
// gave each job: job-<id>.
func replayedJobs(run *Result) map[int]*JobResult {
	out := map[int]*JobResult{}
	for i := range run.Jobs {
		var id int
		if _, err := fmt.Sscanf(run.Jobs[i].Name, "job-%d", &id); err == nil && run.Jobs[i].Name == "job-"+strconv.Itoa(id) {
			out[id] = &run.Jobs[i]
		}
	}
	return out
}
