package observer

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json" // every event of a run passes here: the standard decoder was ~6 % of a simtest run
	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
)

// Violation is one broken invariant, found as the event that broke it arrived.
type Violation struct {
	// Time is the wall time of the event that showed it.
	Time time.Time `json:"time"`
	// Kind is "vram", "share" (a GPU's jobs holding more than all of its
	// compute), "double-run", "lifecycle", "seq-gap", "seq-order",
	// "ran-after-death" or "priority" (a job preempted for one that does
	// not outrank it).
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (v Violation) String() string {
	return v.Time.Format("15:04:05.000") + " VIOLATION " + v.Kind + ": " + v.Message
}

// Detection is how long a failure took to be noticed: from the chaos event
// that caused it to the gpu.down that declared it.
type Detection struct {
	Action string        `json:"action"`
	GPU    string        `json:"gpu"`
	After  time.Duration `json:"after_ns"`
	// SelfFenced is set when no scheduler declared the failure (it was
	// restarting) and the GPU's own fence ended the incarnation instead.
	SelfFenced bool `json:"self_fenced,omitempty"`
	// DuringRestart is set when the scheduler was down at the fault or
	// restarted before the verdict: the new scheduler declared it once it
	// had learnt the GPU again, not its supervisor's report at once.
	DuringRestart bool `json:"during_restart,omitempty"`
}

// Checker asserts the cluster's invariants over its event stream (DESIGN
// §3, §8): VRAM within capacity with no overlapping allocation on every
// GPU; a job running in at most one place (a gang on one node, on no more
// GPUs than it asked for); every accepted job queued, running or in
// exactly one terminal state; no gap in any source's seq within one
// incarnation, except on a GPU a drop chaos is dropping (counted instead);
// and no GPU incarnation speaking after it was declared dead (its fence
// must come first). It is pure: Feed it events in arrival order.
type Checker struct {
	mu sync.Mutex
	// OnViolation, when set, hears each violation as it is found.
	OnViolation func(Violation)

	sources  map[string]uint64
	dropping map[string]bool
	gpus     map[string]*gpuSeen
	// nodeBoot is the latest boot (incarnation / IncarnationsPerBoot) any
	// GPU of each node was heard at: a GPU of the node heard last at an
	// earlier boot belongs to a process that has since restarted.
	nodeBoot map[string]int
	// nodeBootAt is when (the publisher's wall time) each node's latest
	// boot was first heard: a word of an earlier boot sent before it is
	// the dead process's, late, not a sign of life.
	nodeBootAt map[string]time.Time
	jobs       map[string]*jobSeen
	faults     map[string]faultSeen
	// schedDown is set from a sched.down to the next sched.up; schedUpAt
	// is the last sched.up.
	schedDown bool
	schedUpAt time.Time
	// behindSources are the sources known when the checker last fell
	// behind: each one's first gap from then is events it missed, not a
	// violation (a source that had none keeps its mark until a gap or the
	// next fall: one later loss of the cluster's own would then be
	// counted as missed — the price of not calling a late delivery a gap).
	behindSources map[string]bool
	// markedBehind: MarkBehind counted the fall a Resync is to follow;
	// reconnects is the connection's reconnect count last heard.
	markedBehind bool
	reconnects   uint64
	// journalless is set when a scheduler went down without a job
	// journal: what it alone knew is gone with it.
	journalless bool
	undetected  []string
	violations  []Violation
	detections  []Detection
	replaced    []time.Duration
	requeued    []time.Duration
	first       time.Time
	last        time.Time
	events      int
	c           CheckCounts
}

// CheckCounts are the checker's tallies.
type CheckCounts struct {
	Events int `json:"events"`
	// Jobs is the jobs seen submitted; the rest split them by where they are.
	Jobs      int `json:"jobs"`
	Completed int `json:"completed"`
	Cancelled int `json:"cancelled"`
	Rejected  int `json:"rejected"`
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	// LostInQueue are jobs that were only queued when the scheduler was
	// killed (its queue is not durable yet); CompletedUnreported are jobs
	// a GPU finished while no scheduler was there to report it.
	LostInQueue         int `json:"lost_in_queue"`
	CompletedUnreported int `json:"completed_unreported"`
	// FellBehind counts the times the checker fell behind the cluster
	// (disconnected, or the stream dropped events it had not read yet)
	// and resynchronised from a snapshot; Missed the events it then did
	// not see (the gaps in its sources' seq), EndedUnseen the jobs that
	// ended meanwhile (gone from the snapshot: how, it cannot tell).
	FellBehind  int `json:"fell_behind"`
	Missed      int `json:"missed"`
	EndedUnseen int `json:"ended_unseen"`
	// LostUnseen are jobs running on a GPU that was killed while no
	// scheduler ran and none kept a journal: nothing that survived knew
	// them.
	LostUnseen int `json:"lost_unseen"`
	// Restored counts the jobs first heard of in a restarted scheduler's
	// job.restored (their job.submitted never reached the history).
	Restored int `json:"restored"`
	// Lost counts job.lost events; Recovered the lost jobs placed again.
	Lost        int `json:"lost"`
	Recovered   int `json:"recovered"`
	Preemptions int `json:"preemptions"`
	GPUDeaths   int `json:"gpu_deaths"`
	// Faults counts chaos actions seen; Undetected the hangs and
	// partitions that healed before any lease ran out.
	Faults         int `json:"faults"`
	Undetected     int `json:"undetected"`
	SchedulerKills int `json:"scheduler_kills"`
	// ExpectedGaps are events missing on sources a drop chaos drops, and
	// before a crash's gpu.down (what the dead actor had not sent);
	// StaleEvents are events from dead incarnations (ignored).
	ExpectedGaps int `json:"expected_gaps"`
	StaleEvents  int `json:"stale_events"`
	// Malformed counts messages on event subjects that were not events.
	Malformed  int `json:"malformed"`
	Violations int `json:"violations"`
}

type gpuSeen struct {
	node, id string
	inc      int
	dead     int
	deadAt   time.Time
	total    int64
	jobs     []events.GPUJob
	// change and at are the last status's change and wall time.
	change string
	at     time.Time
}

type jobSeen struct {
	name      string
	priority  model.Priority
	state     string
	gang      int
	lostAt    time.Time
	wasLost   bool
	recovered bool
	// finishedOnGPU is set when a GPU reported the job completed.
	finishedOnGPU bool
}

type faultSeen struct {
	action      string
	at          time.Time
	incarnation int
	// schedDown: no scheduler was up when the fault happened.
	schedDown bool
}

// detected records how long f took to be declared at t.
func (c *Checker) detected(k string, f faultSeen, t time.Time, selfFenced bool) {
	restart := f.schedDown || c.schedDown || c.schedUpAt.After(f.at)
	// The chaos event is stamped when announced, after the act: a verdict
	// may carry an earlier time. Detection cannot precede the fault.
	c.detections = append(c.detections, Detection{Action: f.action, GPU: k, After: max(0, t.Sub(f.at)), SelfFenced: selfFenced, DuringRestart: restart})
	delete(c.faults, k)
}

// Resync is what the checker does when it fell behind the cluster (its
// connection dropped, or the event stream discarded events before it read
// them): it stops judging what it could not see and takes up the
// cluster's state from snap. The next event of each source it knew
// reveals how many it missed (counted, not violations); each GPU's jobs
// become the snapshot's (so a stale list makes no false double run); each
// unfinished job takes the snapshot's state, and one absent from it ended
// unseen. Terminal states never change. It returns a line for people.
func (c *Checker) Resync(snap *events.Snapshot) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.markedBehind {
		c.markBehind()
	}
	c.markedBehind = false
	if snap == nil {
		return "fell behind the cluster; no snapshot to resynchronise from: judging only what comes next"
	}
	for _, g := range snap.GPUs {
		if g.Unknown {
			continue
		}
		gs := c.gpu(g.Node, g.GPU)
		gs.inc, gs.total, gs.jobs, gs.change = g.Incarnation, g.VRAMTotal, g.Jobs, "resynced"
		c.heardBoot(gs, time.Time{})
	}
	now := map[string]string{}
	for _, j := range snap.Running {
		now[j.JobID] = events.JobRunning
	}
	for _, j := range snap.Queue {
		now[j.JobID] = events.JobQueued
	}
	ended := 0
	for id, j := range c.jobs {
		if terminalStates[j.state] || j.state == "lost-in-queue" || j.state == "lost-unseen" {
			continue
		}
		if state, ok := now[id]; ok {
			j.state = state
			continue
		}
		if snap.Pages <= 1 {
			// Only a whole snapshot can say a job is gone.
			j.state = "ended-unseen"
			ended++
		}
	}
	for _, list := range [][]events.JobInfo{snap.Running, snap.Queue} {
		for _, in := range list {
			if _, known := c.jobs[in.JobID]; !known {
				c.jobs[in.JobID] = &jobSeen{name: in.Name, state: now[in.JobID], gang: in.GPUs}
				c.c.Jobs++
			}
		}
	}
	return fmt.Sprintf("fell behind the cluster: resynchronised from a snapshot (%d running, %d queued; %d jobs ended unseen); the events missed are counted as their sources speak again",
		len(snap.Running), len(snap.Queue), ended)
}

// Reconnected tells the checker its connection's reconnect count: a
// count higher than the last one it heard marks it behind (MarkBehind),
// once per reconnect whoever tells it first; baseline sets the count
// without marking (the connection's past).
func (c *Checker) Reconnected(count uint64, baseline bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if count <= c.reconnects {
		return
	}
	c.reconnects = count
	if !baseline {
		c.markBehind()
		c.markedBehind = true
	}
}

// MarkBehind says the checker has just fallen behind (its connection came
// back): from here, each source's first gap is missed events, not a
// violation. Call it
// before feeding any event that came after the gap (a Resync that
// follows takes the state from a snapshot; a Resync alone marks too).
func (c *Checker) MarkBehind() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.markBehind()
	c.markedBehind = true
}

func (c *Checker) markBehind() {
	c.c.FellBehind++
	if c.behindSources == nil {
		c.behindSources = map[string]bool{}
	}
	for src := range c.sources {
		c.behindSources[src] = true
	}
}

// NewChecker returns an empty checker.
func NewChecker() *Checker {
	return &Checker{sources: map[string]uint64{}, dropping: map[string]bool{}, gpus: map[string]*gpuSeen{}, nodeBoot: map[string]int{}, nodeBootAt: map[string]time.Time{},
		jobs: map[string]*jobSeen{}, faults: map[string]faultSeen{}}
}

func (c *Checker) violate(at time.Time, kind, format string, args ...any) {
	v := Violation{Time: at, Kind: kind, Message: fmt.Sprintf(format, args...)}
	c.violations = append(c.violations, v)
	if c.OnViolation != nil {
		c.OnViolation(v)
	}
}

// gpuKey names a GPU by node and id.
func gpuKey(node, gpu string) string { return node + "/" + gpu }

// sourceGPU returns the GPU key of a GPU actor's source "/gpu/<node>/<gpu>/<inc>".
func sourceGPU(src string) (string, bool) {
	parts := strings.Split(src, "/")
	if len(parts) != 5 || parts[1] != "gpu" {
		return "", false
	}
	return gpuKey(parts[2], parts[3]), true
}

// Feed checks one event (its NATS subject and decoded envelope).
func (c *Checker) Feed(subject string, ev *events.Decoded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	if c.first.IsZero() {
		c.first = ev.Time
	}
	c.last = ev.Time
	c.checkSeq(ev)
	family, typ, _ := events.ParseType(ev.Type)
	switch family {
	case "gpu":
		var st events.GPUStatus
		if json.Unmarshal(ev.Data, &st) != nil {
			return
		}
		switch typ {
		case events.GPUDown:
			c.down(ev, st)
		case events.GPUStatusType, events.GPUUp:
			c.status(ev, st)
		}
	case "job":
		var in events.JobInfo
		if json.Unmarshal(ev.Data, &in) == nil {
			c.job(ev, typ, in)
		}
	case "chaos":
		var ce events.ChaosEvent
		if json.Unmarshal(ev.Data, &ce) == nil {
			c.chaos(ev, typ, ce)
		}
	case "sched":
		switch typ {
		case events.SchedDown:
			c.schedDown = true
			var down events.SchedLifecycle
			if json.Unmarshal(ev.Data, &down) == nil && !down.Durable {
				c.journalless = true
				c.schedulerDown()
			}
		case events.SchedUp:
			c.schedDown, c.schedUpAt = false, ev.Time
		}
	}
}

func (c *Checker) checkSeq(ev *events.Decoded) {
	if ev.Seq == 0 || ev.Source == "" {
		return
	}
	last, ok := c.sources[ev.Source]
	c.sources[ev.Source] = max(last, ev.Seq)
	if !ok {
		return // the first event heard from this source: the baseline
	}
	if c.behindSources[ev.Source] && ev.Seq > last+1 {
		// The first gap of this source since the checker fell behind: what
		// lies in it was missed, not lost by the cluster. The mark waits
		// for the gap, not for the next event: events received before the
		// connection dropped may still be taken after the checker learned
		// of the reconnect (seen in CI: a contiguous event used the mark up
		// and the real gap that followed was judged a violation).
		delete(c.behindSources, ev.Source)
		c.c.Missed += int(ev.Seq - last - 1)
		return
	}
	switch {
	case ev.Seq == last+1:
	case ev.Seq > last+1:
		missing := int(ev.Seq - last - 1)
		if key, ok := sourceGPU(ev.Source); ok && c.dropping[key] {
			c.c.ExpectedGaps += missing
			return
		}
		if ev.Type == events.Type("gpu", events.GPUDown) {
			// A crash: its supervisor speaks for the dead actor, after
			// what the actor had numbered but not sent yet (held by a
			// partition or a delay line), which died with it.
			c.c.ExpectedGaps += missing
			return
		}
		c.violate(ev.Time, "seq-gap", "%s: %d event(s) missing before seq %d", ev.Source, missing, ev.Seq)
	default:
		c.violate(ev.Time, "seq-order", "%s: seq %d after %d (duplicate or reordered)", ev.Source, ev.Seq, last)
	}
}

func (c *Checker) gpu(node, id string) *gpuSeen {
	k := gpuKey(node, id)
	g, ok := c.gpus[k]
	if !ok {
		g = &gpuSeen{node: node, id: id}
		c.gpus[k] = g
	}
	return g
}

func (c *Checker) down(ev *events.Decoded, st events.GPUStatus) {
	g := c.gpu(st.Node, st.GPU)
	if st.Incarnation > g.dead {
		g.dead, g.deadAt = st.Incarnation, ev.Time
		c.c.GPUDeaths++
	}
	g.jobs = nil
	k := gpuKey(st.Node, st.GPU)
	if f, ok := c.faults[k]; ok && !ev.Time.Before(f.at) {
		c.detected(k, f, ev.Time, false)
	}
}

func (c *Checker) status(ev *events.Decoded, st events.GPUStatus) {
	g := c.gpu(st.Node, st.GPU)
	if st.Incarnation <= g.dead {
		// A dead incarnation's backlog is fine; a dead incarnation still
		// acting after the verdict ran its jobs past its lease.
		if ev.Time.After(g.deadAt) {
			c.violate(ev.Time, "ran-after-death", "%s incarnation %d published %s (%s) at %s, after it was declared dead at %s",
				gpuKey(st.Node, st.GPU), st.Incarnation, ev.Type, st.Change, ev.Time.Format("15:04:05.000"), g.deadAt.Format("15:04:05.000"))
		}
		c.c.StaleEvents++
		return
	}
	if st.Incarnation < g.inc {
		c.c.StaleEvents++
		return
	}
	k := gpuKey(st.Node, st.GPU)
	if f, ok := c.faults[k]; ok && f.action != events.ChaosKillAction && (st.Change == events.ChangeRejoined || st.Change == events.ChangeWoke) {
		// A fault on a GPU the checker had not heard from yet (its chaos
		// event overtook the GPU's first status) has no incarnation: a
		// status says it healed in place, a gpu.up that it fenced.
		same := st.Incarnation == f.incarnation || (f.incarnation == 0 && !strings.HasSuffix(ev.Type, "."+events.GPUUp))
		switch {
		case same:
			// Back in the same incarnation: the fault healed within the lease.
			c.undetected = append(c.undetected, f.action+" "+k)
			delete(c.faults, k)
		case st.Incarnation > f.incarnation:
			// Rejoined as a new incarnation with no verdict heard: its lease
			// ran out while no scheduler could declare it (a scheduler
			// restart), so it fenced itself.
			c.detected(k, f, ev.Time, true)
		}
	}
	g.inc, g.total, g.jobs, g.change, g.at = st.Incarnation, st.VRAMTotal, st.Jobs, st.Change+" "+st.JobID, ev.Time
	c.heardBoot(g, ev.Time)
	if st.Change == events.ChangeCompleted && st.JobID != "" {
		if j, ok := c.jobs[st.JobID]; ok {
			j.finishedOnGPU = true
		}
	}
	c.checkVRAM(ev, g)
	c.checkPlaces(ev, g)
}

func (c *Checker) checkVRAM(ev *events.Decoded, g *gpuSeen) {
	jobs := slices.Clone(g.jobs)
	sort.Slice(jobs, func(i, k int) bool { return jobs[i].Offset < jobs[k].Offset })
	var sum, end int64
	for i, j := range jobs {
		sum += j.VRAM
		if j.Offset < 0 || j.VRAM < 0 || (g.total > 0 && j.Offset+j.VRAM > g.total) {
			c.violate(ev.Time, "vram", "%s: job %s at offset %d size %d is outside the GPU's %d bytes", gpuKey(g.node, g.id), j.JobID, j.Offset, j.VRAM, g.total)
		}
		if i > 0 && j.Offset < end {
			c.violate(ev.Time, "vram", "%s: job %s at offset %d overlaps the allocation before it (ends at %d)", gpuKey(g.node, g.id), j.JobID, j.Offset, end)
		}
		end = max(end, j.Offset+j.VRAM)
	}
	if g.total > 0 && sum > g.total {
		c.violate(ev.Time, "vram", "%s: %d bytes allocated on a %d-byte GPU", gpuKey(g.node, g.id), sum, g.total)
	}
	// A GPU's compute is shared in thousandths (gpu_milli; a job sized by
	// its VRAM holds its VRAM's share): its jobs hold 1000 at most.
	milli := 0
	for _, j := range jobs {
		milli += j.Milli
	}
	if milli > milliPerGPU {
		c.violate(ev.Time, "share", "%s: jobs hold %d/%d of the GPU", gpuKey(g.node, g.id), milli, milliPerGPU)
	}
}

// milliPerGPU is a whole GPU in the thousandths gpu_milli counts in
// (policy.MilliPerGPU; the checker reads only events).
const milliPerGPU = 1000

// checkPlaces asserts that each job g runs runs nowhere else: a gang's
// shards share one node and number no more than the GPUs it asked for; a
// distributed training job's replicas (over any nodes) are of one
// placement (checkTrainingPlaces).
func (c *Checker) checkPlaces(ev *events.Decoded, g *gpuSeen) {
	if c.lateWord(g, ev.Time) {
		return // judged when it speaks after the restart, if it does
	}
	for _, j := range g.jobs {
		if j.State != events.GPUJobRunning {
			continue
		}
		if j.Training != nil {
			c.checkTrainingPlaces(ev, g, j)
			continue
		}
		gang := 1
		if js, ok := c.jobs[j.JobID]; ok && js.gang > 1 {
			gang = js.gang
		}
		var places []string
		otherNode := ""
		for k, o := range c.gpus {
			if o.inc <= o.dead || c.earlierBoot(o, g) {
				continue
			}
			if o != g && c.dropping[k] {
				// Its events are being dropped: what it last said it runs
				// may be stale (the stop's status lost, not the stop). It
				// is judged by its next status instead, when this check
				// runs for it against the others.
				continue
			}
			for _, oj := range o.jobs {
				if oj.JobID == j.JobID && oj.State == events.GPUJobRunning {
					places = append(places, fmt.Sprintf("%s (incarnation %d, last %q at %s)", k, o.inc, o.change, o.at.Format("15:04:05.000")))
					if o.node != g.node {
						otherNode = k
					}
				}
			}
		}
		if otherNode != "" || len(places) > gang {
			sort.Strings(places)
			c.violate(ev.Time, "double-run", "job %s runs in %d places at once: %s", j.JobID, len(places), strings.Join(places, ", "))
		}
	}
}

// heardBoot notes the boot g was heard at for its node, at time at.
func (c *Checker) heardBoot(g *gpuSeen, at time.Time) {
	if boot := g.inc / durable.IncarnationsPerBoot; boot > c.nodeBoot[g.node] {
		c.nodeBoot[g.node], c.nodeBootAt[g.node] = boot, at
	}
}

// lateWord reports whether a status of g, sent at t, is a word of an
// earlier boot of its node's process sent before the later boot was
// heard: the dead process's, delivered late.
func (c *Checker) lateWord(g *gpuSeen, t time.Time) bool {
	return g.inc/durable.IncarnationsPerBoot < c.nodeBoot[g.node] && !t.After(c.nodeBootAt[g.node])
}

// earlierBoot reports whether o, another GPU than g, was last heard at an
// incarnation of an earlier boot than another GPU of its node since: the
// process hosting that node restarted (kill -9 says nothing), and o's
// last status stands only until it speaks again. It is not judged as
// running anything meanwhile. When it speaks again it is alive, and this
// check, run for it, counts the others (a job running in both is then
// found). A GPU of another process (a remote node's, numbered by its own
// boots) is unaffected by this one's restarts.
func (c *Checker) earlierBoot(o, g *gpuSeen) bool {
	return o != g && o.inc/durable.IncarnationsPerBoot < c.nodeBoot[o.node]
}

// checkTrainingPlaces asserts that the GPUs running training job j's
// replicas run one placement of it: the same restart of its model state
// (each placement is one more restart: a replica of an earlier one still
// running is the job run twice) on no more GPUs than that placement's
// replicas. They may be on any nodes.
func (c *Checker) checkTrainingPlaces(ev *events.Decoded, g *gpuSeen, j events.GPUJob) {
	replicas := 0
	for _, n := range j.Training.Placement {
		replicas += n
	}
	var places []string
	other := false
	for k, o := range c.gpus {
		if o.inc <= o.dead || (o != g && c.dropping[k]) || c.earlierBoot(o, g) {
			continue // (as checkPlaces: a dead incarnation, or stale)
		}
		for _, oj := range o.jobs {
			if oj.JobID != j.JobID || oj.State != events.GPUJobRunning || oj.Training == nil {
				continue
			}
			places = append(places, fmt.Sprintf("%s (restart %d, incarnation %d, last %q at %s)", k, oj.Training.Restarts, o.inc, o.change,
				o.at.Format("15:04:05.000")))
			other = other || oj.Training.Restarts != j.Training.Restarts
		}
	}
	if other || len(places) > replicas {
		sort.Strings(places)
		c.violate(ev.Time, "double-run", "training job %s runs in %d places at once, %d replicas in its placement: %s", j.JobID,
			len(places), replicas, strings.Join(places, ", "))
	}
}

// terminalStates are the states a job ends in.
var terminalStates = map[string]bool{events.JobCompleted: true, events.JobCancelled: true, events.JobRejected: true}

func (c *Checker) job(ev *events.Decoded, typ string, in events.JobInfo) {
	id := in.JobID
	if id == "" {
		id = ev.Subject
	}
	j, ok := c.jobs[id]
	if typ == events.JobSubmitted || (!ok && typ == events.JobRejected) {
		if ok {
			c.violate(ev.Time, "lifecycle", "job %s submitted twice", id)
			return
		}
		j = &jobSeen{name: in.Name, priority: in.Priority, state: typ, gang: in.GPUs}
		c.jobs[id] = j
		c.c.Jobs++
		return
	}
	if typ == events.JobRestored {
		// Not a transition: a restarted scheduler names an unfinished job
		// it took back. One the checker never saw submitted (its event
		// lost to a kill) is counted from here.
		if !ok {
			state := in.State
			if state == events.JobPlaced || state == events.JobStarted {
				state = events.JobRunning
			}
			c.jobs[id] = &jobSeen{name: in.Name, priority: in.Priority, state: state, gang: in.GPUs}
			c.c.Jobs++
			c.c.Restored++
		}
		return
	}
	if !ok {
		return // submitted before the checker attached
	}
	if terminalStates[j.state] {
		why := ""
		if in.Reason != "" {
			why = " (" + in.Reason + ")"
		}
		c.violate(ev.Time, "lifecycle", "job %s (%s) is %s%s after it was already %s", id, j.name, typ, why, j.state)
		return
	}
	switch typ {
	case events.JobLost:
		j.lostAt, j.wasLost = ev.Time, true
		c.c.Lost++
	case events.JobQueued:
		if !j.lostAt.IsZero() {
			c.requeued = append(c.requeued, ev.Time.Sub(j.lostAt))
		}
	case events.JobPlaced:
		if !j.lostAt.IsZero() {
			c.replaced = append(c.replaced, ev.Time.Sub(j.lostAt))
			j.lostAt = time.Time{}
			if !j.recovered {
				j.recovered = true
				c.c.Recovered++
			}
		}
	case events.JobPreempted:
		c.c.Preemptions++
		// Preemption (not a round's re-allocation, which names no
		// preemptor) stops only jobs of lower priority than the one it
		// makes room for.
		if p, ok := c.jobs[in.Preemptor]; ok && p.priority <= in.Priority {
			c.violate(ev.Time, "priority", "job %s (%s, priority %s) preempted for %s (%s, priority %s), which does not outrank it",
				id, j.name, in.Priority, in.Preemptor, p.name, p.priority)
		}
	}
	state := typ
	if typ == events.JobStarted {
		state = events.JobRunning
	}
	j.state = state
}

func (c *Checker) chaos(ev *events.Decoded, typ string, ce events.ChaosEvent) {
	k := gpuKey(ce.Node, ce.GPU)
	if ce.Failed != "" {
		// Announced, then not done.
		if f, ok := c.faults[k]; ok && f.action == typ {
			delete(c.faults, k)
		}
		if typ == events.ChaosKillScheduler {
			c.c.SchedulerKills--
		}
		c.c.Faults--
		return
	}
	c.c.Faults++
	switch typ {
	case events.ChaosKillAction, events.ChaosHang, events.ChaosPartition:
		if f, pending := c.faults[k]; pending && f.action != events.ChaosKillAction {
			c.undetected = append(c.undetected, f.action+" "+k)
		}
		inc := 0
		if g, ok := c.gpus[k]; ok {
			inc = g.inc
			if typ == events.ChaosKillAction && g.inc > 0 && g.dead >= g.inc {
				// A kill of an incarnation already declared dead (hung or
				// cut off, fenced meanwhile) has nothing left to detect: its
				// own gpu.down comes when the actor can hear the kill.
				return
			}
		}
		c.faults[k] = faultSeen{action: typ, at: ev.Time, incarnation: inc, schedDown: c.schedDown}
		if g, ok := c.gpus[k]; ok && typ == events.ChaosKillAction && c.schedDown && c.journalless {
			// Its jobs die with the actor, and no scheduler hears of it:
			// the next one (no journal) cannot know them. A gang's other
			// GPUs may still teach it the job, which then moves on.
			for _, gj := range g.jobs {
				if j, ok := c.jobs[gj.JobID]; ok && j.state == events.JobRunning && !j.finishedOnGPU {
					j.state = "lost-unseen"
				}
			}
		}
	case events.ChaosDrop:
		if ce.Drop > 0 {
			c.dropping[k] = true
		}
	case events.ChaosKillScheduler:
		c.c.SchedulerKills++
	}
}

// schedulerDown counts the jobs a dying scheduler held only in its queue:
// they are lost when it kept no journal (a durable queue is taken back).
func (c *Checker) schedulerDown() {
	for _, j := range c.jobs {
		if j.state == events.JobQueued || j.state == events.JobSubmitted || j.state == events.JobLost || j.state == events.JobPreempted {
			j.state = "lost-in-queue"
		}
	}
}

// Malformed counts an event that could not be decoded (it is dropped).
func (c *Checker) Malformed(subject string, fe *model.FieldError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.c.Malformed++
}

// Violations returns the violations found so far.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// CheckSummary is what the checker found, for people and for tests.
type CheckSummary struct {
	CheckCounts
	// Detections are the failures declared, each with its detection time;
	// Replaced the times from a job's loss to its next placement, and
	// Requeued from its loss to its return to the queue.
	Detections []Detection     `json:"detections"`
	Replaced   []time.Duration `json:"replaced_ns"`
	Requeued   []time.Duration `json:"requeued_ns"`
	Violations []Violation     `json:"violations"`
	Undetected []string        `json:"undetected,omitempty"`
	// Stuck names (up to 20) the jobs not ended: running, or lost and
	// still queued.
	Stuck  []string       `json:"stuck,omitempty"`
	States map[string]int `json:"states"`
	Span   time.Duration  `json:"span_ns"`
}

// Summary tallies what the checker has seen.
func (c *Checker) Summary() CheckSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := CheckSummary{CheckCounts: c.c, Detections: slices.Clone(c.detections), Replaced: slices.Clone(c.replaced),
		Requeued: slices.Clone(c.requeued), Violations: slices.Clone(c.violations), States: map[string]int{}, Span: c.last.Sub(c.first)}
	s.Events = c.events
	s.Violations = slices.Clone(c.violations)
	s.CheckCounts.Violations = len(c.violations)
	for id, j := range c.jobs {
		state := j.state
		if state == events.JobRunning && j.finishedOnGPU {
			state = "completed-unreported"
		}
		s.States[state]++
		switch state {
		case events.JobCompleted:
			s.Completed++
		case events.JobCancelled:
			s.Cancelled++
		case events.JobRejected:
			s.Rejected++
		case events.JobRunning:
			s.Running++
			if len(s.Stuck) < 20 {
				s.Stuck = append(s.Stuck, jobLabel(id, j.name)+" (running)")
			}
		case "lost-in-queue":
			s.LostInQueue++
		case "completed-unreported":
			s.CompletedUnreported++
		case "lost-unseen":
			s.LostUnseen++
		case "ended-unseen":
			s.EndedUnseen++
		default:
			s.Queued++
			if j.wasLost && len(s.Stuck) < 20 {
				s.Stuck = append(s.Stuck, jobLabel(id, j.name)+" (queued after a loss)")
			}
		}
	}
	s.Undetected = append(s.Undetected, c.undetected...)
	for k, f := range c.faults {
		if f.action != events.ChaosKillAction {
			s.Undetected = append(s.Undetected, f.action+" "+k+" (pending)")
		}
	}
	sort.Strings(s.Undetected)
	s.CheckCounts.Undetected = len(s.Undetected)
	return s
}

// durations summarises a list of durations as min / median / max.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("%d, min %s, median %s, max %s", len(s), r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}

// Write prints the summary for a person.
func (s CheckSummary) Write(w io.Writer) {
	fmt.Fprintf(w, "observer check: %d events over %s\n", s.Events, s.Span.Round(time.Millisecond))
	fmt.Fprintf(w, "  jobs seen            %d: completed %d, running %d, queued %d, cancelled %d, rejected %d\n",
		s.Jobs, s.Completed, s.Running, s.Queued, s.Cancelled, s.Rejected)
	if s.Restored > 0 {
		fmt.Fprintf(w, "  restored             %d jobs first heard of in a restarted scheduler's job.restored (their job.submitted never reached the history)\n", s.Restored)
	}
	fmt.Fprintf(w, "  lost and recovered   %d job.lost events, %d jobs placed again\n", s.Lost, s.Recovered)
	if s.SchedulerKills > 0 || s.LostInQueue > 0 || s.CompletedUnreported > 0 || s.LostUnseen > 0 {
		fmt.Fprintf(w, "  scheduler kills      %d: lost-in-queue %d (queued when a scheduler without a job journal died), completed while no scheduler saw %d, lost unseen %d (running on a GPU killed while no scheduler ran, no journal)\n",
			s.SchedulerKills, s.LostInQueue, s.CompletedUnreported, s.LostUnseen)
	}
	fmt.Fprintf(w, "  preemptions          %d\n", s.Preemptions)
	fmt.Fprintf(w, "  chaos actions        %d; GPU deaths %d; undetected (healed within the lease) %d\n", s.Faults, s.GPUDeaths, s.CheckCounts.Undetected)
	byAction := map[string][]time.Duration{}
	for _, d := range s.Detections {
		a := d.Action
		switch {
		case d.SelfFenced:
			a += " (self-fenced, no scheduler)"
		case d.DuringRestart:
			a += " (across a scheduler restart)"
		}
		byAction[a] = append(byAction[a], d.After)
	}
	actions := make([]string, 0, len(byAction))
	for a := range byAction {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		fmt.Fprintf(w, "  time to detect %-9s %s\n", a, durations(byAction[a]))
	}
	fmt.Fprintf(w, "  time to re-queue     %s\n", durations(s.Requeued))
	fmt.Fprintf(w, "  time to re-place     %s\n", durations(s.Replaced))
	fmt.Fprintf(w, "  expected seq gaps    %d (drop chaos); stale events ignored %d; malformed messages dropped %d\n",
		s.ExpectedGaps, s.StaleEvents, s.Malformed)
	if s.FellBehind > 0 {
		fmt.Fprintf(w, "  fell behind          %d time(s): %d events missed, %d jobs ended unseen (resynchronised from snapshots; nothing unseen is judged)\n",
			s.FellBehind, s.Missed, s.EndedUnseen)
	}
	if len(s.Stuck) > 0 {
		fmt.Fprintf(w, "  not ended yet        %s (at most 20 named: the running jobs, and the lost jobs still queued)\n", strings.Join(s.Stuck, ", "))
	}
	if len(s.Violations) == 0 {
		fmt.Fprintln(w, "  violations           0")
		return
	}
	fmt.Fprintf(w, "  violations           %d\n", len(s.Violations))
	for i, v := range s.Violations {
		if i == 20 {
			fmt.Fprintf(w, "    ... and %d more\n", len(s.Violations)-20)
			break
		}
		fmt.Fprintf(w, "    %s\n", v)
	}
}

// CheckLive subscribes to every event of the cluster and feeds the
// checker until ctx ends, printing each violation to w as it is found. It
// never drops an event (no pending limit): a gap it reports is real.
func CheckLive(ctx context.Context, nc *nats.Conn, subjects events.Subjects, c *Checker, w io.Writer) error {
	sub, err := SubscribeChecker(nc, subjects, c, w)
	if err != nil {
		return err
	}
	// A connection lost and found again (the server dropped a reader that
	// stopped reading, as a stopped process does) missed the events in
	// between: resynchronise from a snapshot rather than judge a history
	// with holes.
	prev := nc.Opts.ReconnectedCB
	nc.SetReconnectHandler(func(conn *nats.Conn) {
		if prev != nil {
			prev(conn)
		}
		c.Reconnected(conn.Stats().Reconnects, false)
		go resync(conn, subjects, c, w)
	})
	<-ctx.Done()
	return DrainChecker(nc, sub)
}

// CheckHistory is CheckLive reading from the cluster's kept event stream
// from where h says (a run audited after the fact, or a checker that must
// not miss an event across a reconnect); live reading when h replays
// nothing.
func CheckHistory(ctx context.Context, nc *nats.Conn, subjects events.Subjects, h History, c *Checker, w io.Writer) error {
	if !h.Replays() {
		return CheckLive(ctx, nc, subjects, c, w)
	}
	prev := c.OnViolation
	c.OnViolation = func(v Violation) {
		fmt.Fprintln(w, v)
		if prev != nil {
			prev(v)
		}
	}
	// Events the stream discarded before they were read (its limits) are
	// a hole in the history: resynchronise from a snapshot.
	h.OnGap = func(missed uint64) {
		fmt.Fprintf(w, "observer check: the event stream discarded %d events before they were read\n", missed)
		c.MarkBehind()
		resync(nc, subjects, c, w)
	}
	return ReadEvents(ctx, nc, subjects, h, func(subject string, data []byte) error {
		ev, fe := events.DecodeEvent(data)
		if fe != nil {
			c.Malformed(subject, fe)
			return nil
		}
		c.Feed(subject, ev)
		return nil
	})
}

// resync takes up the cluster's state from a snapshot after c fell behind
// and says so on w.
func resync(nc *nats.Conn, subjects events.Subjects, c *Checker, w io.Writer) {
	snap, err := FetchSnapshot(nc, subjects)
	if err != nil {
		snap = nil
		fmt.Fprintf(w, "observer check: no snapshot after falling behind: %v\n", err)
	}
	fmt.Fprintf(w, "observer check: %s\n", c.Resync(snap))
}

// SubscribeChecker subscribes c to every event of the cluster, printing
// each violation to w; once it returns (and nc is flushed) no event is
// missed. DrainChecker ends it.
func SubscribeChecker(nc *nats.Conn, subjects events.Subjects, c *Checker, w io.Writer) (*nats.Subscription, error) {
	var wmu sync.Mutex
	prev := c.OnViolation
	c.OnViolation = func(v Violation) {
		wmu.Lock()
		fmt.Fprintln(w, v)
		wmu.Unlock()
		if prev != nil {
			prev(v)
		}
	}
	// The first event after a reconnect is taken only once the checker
	// knows it fell behind: the reconnect handler (CheckLive) runs on
	// another goroutine and may come later.
	c.Reconnected(nc.Stats().Reconnects, true)
	sub, err := nc.Subscribe(subjects.AllEvents(), func(m *nats.Msg) {
		if events.Redelivered(m) {
			// A stored event someone pulled onto the live subjects (its
			// reply is $JS.ACK…, or it carries Nats-Stream): judged once,
			// when the cluster published it, never again.
			return
		}
		c.Reconnected(nc.Stats().Reconnects, false)
		ev, fe := events.DecodeEvent(m.Data)
		if fe != nil {
			c.Malformed(m.Subject, fe)
			return
		}
		c.Feed(m.Subject, ev)
	})
	if err != nil {
		return nil, err
	}
	sub.SetPendingLimits(-1, -1)
	return sub, nc.Flush()
}

// DrainChecker takes in what has arrived for sub, then unsubscribes.
func DrainChecker(nc *nats.Conn, sub *nats.Subscription) error {
	nc.FlushTimeout(2 * time.Second)
	for i := 0; i < 200; i++ {
		if n, _, _ := sub.Pending(); n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sub.Unsubscribe()
}

// jobLabel names a job for a person: its name with its id's first eight
// characters (ids are what make two jobs of one name apart), or the id
// when the name is not known.
func jobLabel(id, name string) string {
	if name == "" {
		return id
	}
	return name + " [" + id[:min(8, len(id))] + "]"
}
