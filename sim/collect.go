package sim

import (
	"sort"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json" // every job event and sample of a run passes here
	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// JobResult is one job's outcome. Times are simulated seconds from the
// start of the run; Started and Ended say whether Start and End are set.
type JobResult struct {
	Job         string
	Name        string
	Tenant      string
	Priority    string
	State       string
	GPUCount    int
	Submit      float64
	Start       float64
	End         float64
	Started     bool
	Ended       bool
	Node        string
	GPUs        []string
	Preemptions int
	Slowdown    float64
	RunS        float64
	LostWorkS   float64
	WorkS       float64
	// Lost counts the times the job was lost with its GPU (a fault) and
	// re-queued; FaultLostWorkS is the work those losses threw away
	// (reference seconds, of LostWorkS, the rest being preemptions').
	Lost           int
	FaultLostWorkS float64
	// Training is a training job's state as the scheduler last had it.
	Training *model.TrainingState
	// FinishS is a Gavel job's completion second as the rounds counted it
	// (events.JobInfo.FinishS).
	FinishS *float64
}

// FaultCost is what one fault cost: the jobs it took down (lost at one
// instant), the work they lost (GPU-seconds at reference speed) and how
// long until the last of them ran again (RecoveredS; Recovered counts
// those that did).
type FaultCost struct {
	AtS        float64
	Jobs       int
	WorkGPUS   float64
	Recovered  int
	RecoveredS float64
}

// JCT is the job completion time (end − submit), in seconds.
func (j *JobResult) JCT() float64 { return j.End - j.Submit }

// QueueDelay is the wait before the job first ran (start − submit), in seconds.
func (j *JobResult) QueueDelay() float64 { return j.Start - j.Submit }

// Unended reports whether the job neither completed nor was rejected (a
// run's summary counts it as never ended).
func (j *JobResult) Unended() bool { return !j.Completed() && j.State != events.JobRejected }

// Completed reports whether the job did all its work.
func (j *JobResult) Completed() bool { return j.State == events.JobCompleted }

// Sample is the cluster's metrics at one instant, T simulated seconds from
// the start of the run.
type Sample struct {
	T float64
	events.Metrics
}

// collector is an in-process observer: it folds job events into results
// and keeps metrics events as samples. Its subscriptions are watched by
// the virtual clock, so it has seen everything before time moves on.
type collector struct {
	start time.Time
	mu    sync.Mutex
	jobs  map[string]*JobResult
	// terminal counts jobs in a terminal state.
	terminal int
	samples  []Sample
	// faults are the faults seen, by the instant their jobs were lost;
	// lostAt is when each job still waiting to run again was lost.
	faults map[float64]*FaultCost
	lostAt map[string]float64
	// counts are each job's running counts as the scheduler last said
	// them, and what earlier schedulers had counted (counted).
	counts map[string]*jobCounts
	subs   []*nats.Subscription
}

// jobCounts carries a job's running counts across a scheduler restart: a
// scheduler that re-learned the job without a journal counts its
// preemptions, run time and lost work afresh, one restored from a journal
// carries the preemptions and lost work its record kept but counts the
// run time afresh (the record has none). So each count that goes back is
// a new scheduler's, added to what the earlier ones counted (the totals
// never go back) — each on its own: folding all three when one went back
// counted a journaled job's preemptions and lost work twice.
type jobCounts struct {
	said, counted struct {
		preemptions int
		runS, lostS float64
	}
}

// total folds what the scheduler says now into the job's totals.
func (k *jobCounts) total(preemptions int, runS, lostS float64) (int, float64, float64) {
	if preemptions < k.said.preemptions {
		k.counted.preemptions += k.said.preemptions
	}
	if runS < k.said.runS {
		k.counted.runS += k.said.runS
	}
	if lostS < k.said.lostS {
		k.counted.lostS += k.said.lostS
	}
	k.said.preemptions, k.said.runS, k.said.lostS = preemptions, runS, lostS
	return k.counted.preemptions + preemptions, k.counted.runS + runS, k.counted.lostS + lostS
}

func newCollector(start time.Time) *collector {
	return &collector{start: start, jobs: map[string]*JobResult{}, faults: map[float64]*FaultCost{}, lostAt: map[string]float64{},
		counts: map[string]*jobCounts{}}
}

func (c *collector) subscribe(nc *nats.Conn, subjects events.Subjects) error {
	for _, s := range []struct {
		subject string
		handle  nats.MsgHandler
	}{
		{subjects.JobEvent("*"), func(m *nats.Msg) { c.foldTyped(false, m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], m.Data) }},
		{subjects.Metrics(), func(m *nats.Msg) { c.foldTyped(true, "metrics", m.Data) }},
		{subjects.SchedEvent(events.SchedDown), func(m *nats.Msg) { c.schedulerDown(m.Data) }},
	} {
		sub, err := nc.Subscribe(s.subject, s.handle)
		if err != nil {
			return err
		}
		sub.SetPendingLimits(-1, -1) // a simulation's observer must not drop events
		c.subs = append(c.subs, sub)
	}
	return nil
}

func (c *collector) seconds(t time.Time) float64 { return t.Sub(c.start).Seconds() }

// fold takes one event: a metrics sample, or a job event.
func (c *collector) fold(isMetrics bool, data []byte) { c.foldTyped(isMetrics, "", data) }

// foldTyped takes one event of type typ (the last token of its subject:
// lost, started …).
func (c *collector) foldTyped(isMetrics bool, typ string, data []byte) {
	if isMetrics {
		var ev struct {
			SimTime time.Time      `json:"simtime"`
			Data    events.Metrics `json:"data"`
		}
		// A sample taken while a restarted scheduler re-learns the
		// cluster counts only what it has read so far: not a figure of
		// the cluster (its utilisation would plunge for one sample).
		if json.Unmarshal(data, &ev) == nil && !ev.Data.Settling {
			c.mu.Lock()
			c.samples = append(c.samples, Sample{T: c.seconds(ev.SimTime), Metrics: ev.Data})
			c.mu.Unlock()
		}
		return
	}
	var ev struct {
		SimTime time.Time      `json:"simtime"`
		Data    events.JobInfo `json:"data"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	in := ev.Data
	at := c.seconds(ev.SimTime)
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[in.JobID]
	if !ok {
		j = &JobResult{Job: in.JobID}
		c.jobs[in.JobID] = j
	}
	wasTerminal := terminal(j.State)
	k := c.counts[in.JobID]
	if k == nil {
		k = &jobCounts{}
		c.counts[in.JobID] = k
	}
	preemptions, runS, lostS := k.total(in.Preemptions, in.RunS, in.LostWorkS)
	switch typ {
	case events.JobLost:
		// Lost with its GPU: the faults of one instant are one fault.
		work := max(0, lostS-j.LostWorkS)
		j.Lost++
		j.FaultLostWorkS += work
		f := c.faults[at]
		if f == nil {
			f = &FaultCost{AtS: at}
			c.faults[at] = f
		}
		f.Jobs++
		f.WorkGPUS += work * float64(max(in.GPUs, 1))
		c.lostAt[in.JobID] = at
	case events.JobStarted:
		if t0, ok := c.lostAt[in.JobID]; ok {
			delete(c.lostAt, in.JobID)
			f := c.faults[t0]
			f.Recovered++
			f.RecoveredS = max(f.RecoveredS, at-t0)
		}
	}
	j.Name, j.Tenant, j.Priority, j.State, j.GPUCount = in.Name, in.Tenant, in.Priority.String(), in.State, in.GPUs
	j.Submit = c.seconds(in.SubmittedAt)
	if in.FirstStartedAt != nil {
		j.Start, j.Started = c.seconds(*in.FirstStartedAt), true
	}
	if in.EndedAt != nil {
		j.End, j.Ended = c.seconds(*in.EndedAt), true
	}
	if in.Node != "" {
		j.Node, j.GPUs = in.Node, in.GPUIDs
	}
	j.Preemptions, j.Slowdown, j.RunS, j.LostWorkS, j.WorkS = preemptions, in.Slowdown, runS, lostS, in.WorkS
	if in.TrainingState != nil {
		j.Training = in.TrainingState
	}
	if in.FinishS != nil {
		j.FinishS = in.FinishS
	}
	if terminal(j.State) && !wasTerminal {
		c.terminal++
	} else if wasTerminal && !terminal(j.State) {
		c.terminal-- // a job taken for lost with its scheduler showed up again
	}
}

// StateLostWithScheduler is the state of a job a scheduler without a
// journal held, unfinished and not running, when it died: no one will
// know it again (events.SchedLifecycle.LostJobs). It ends the job for a
// run's accounting, as unfinished; should the job show up again (a commit
// the dead scheduler sent was taken), its next event says what it is.
const StateLostWithScheduler = "lost-with-scheduler"

// schedulerDown takes a scheduler's death: the jobs it lost with it.
func (c *collector) schedulerDown(data []byte) {
	var ev struct {
		Data events.SchedLifecycle `json:"data"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ev.Data.LostJobs {
		j, ok := c.jobs[id]
		if !ok || terminal(j.State) {
			continue
		}
		j.State = StateLostWithScheduler
		c.terminal++
	}
}

func terminal(state string) bool {
	switch state {
	case events.JobCompleted, events.JobCancelled, events.JobRejected, StateLostWithScheduler:
		return true
	}
	return false
}

// done reports whether every one of submitted jobs has ended.
func (c *collector) done(submitted int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.jobs) >= submitted && c.terminal == len(c.jobs)
}

// results returns the jobs in submission order (then by name) and the samples.
func (c *collector) results() ([]JobResult, []Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	jobs := make([]JobResult, 0, len(c.jobs))
	for _, j := range c.jobs {
		jobs = append(jobs, *j)
	}
	sort.Slice(jobs, func(a, b int) bool {
		if jobs[a].Submit != jobs[b].Submit {
			return jobs[a].Submit < jobs[b].Submit
		}
		if jobs[a].Name != jobs[b].Name {
			return jobs[a].Name < jobs[b].Name
		}
		return jobs[a].Job < jobs[b].Job
	})
	return jobs, append([]Sample(nil), c.samples...)
}

// faultCosts returns the faults seen, in time order.
func (c *collector) faultCosts() []FaultCost {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]FaultCost, 0, len(c.faults))
	for _, f := range c.faults {
		out = append(out, *f)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].AtS < out[b].AtS })
	return out
}
