package core

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/pollux"
)

// TrainingConfig runs distributed training jobs (submissions with
// `training`, the Pollux paper's kind) in rounds: every Interval of
// simulated time from Origin, the scheduler reads each placed job's state
// from its GPUs, lets Policy re-allocate the jobs over the cluster's
// nodes (pollux.Rounds, the deciding half of the Pollux simulator's loop,
// which `cluster replay --pollux --offline` steps on the pure model), and
// enacts the jobs whose allocation changed: their GPUs stop them, and
// their replicas are reserved and committed on free GPUs of the nodes the
// policy named — one job across several nodes. The GPU actors step the
// jobs (actors/gpu/training.go).
type TrainingConfig struct {
	Model *pollux.Model
	// Policy decides each interval's allocation (pollux.NewPolicy:
	// tiresias, optimus, pollux).
	Policy pollux.Policy
	// Interval is the rounds' period (MODEL.md §1: 60 s).
	Interval time.Duration
	// Origin is the run's second 0: rounds fall on whole intervals from
	// it, and a job's submission second counts from it.
	Origin time.Time
}

// training is the core's state of training jobs: the deciding state and
// the round in progress.
type training struct {
	cfg    TrainingConfig
	rounds *pollux.Rounds
	// mirror is the model's copy of each training job (by core job id,
	// which is its name in rounds), brought up to date from its GPUs
	// before each decision.
	mirror map[string]*pollux.Job
	// at is the second of the round in progress; waiting counts the
	// placed jobs whose state has not come back yet.
	at      int
	waiting int
	// nodes are the cluster's nodes as the round in progress numbers them.
	nodes []trainingNode

	// What a round reads and moves of the rest of the core (attach):
	// the jobs, the view and the nodes' registry, the calls that read a
	// placed job's state, the stops and placements that enact a round,
	// and the lifecycle that says so.
	clock     *instant
	jobs      map[string]*job
	running   *runningJobs
	view      *view
	registry  *nodeRegistry
	calls     *callTracker
	stops     *stops
	life      *lifecycle
	writes    *journalWrites
	stats     *totals
	plugins   *policy.Profile
	out       *outbox
	log       *zap.Logger
	subjects  events.Subjects
	negotiate func(a *attempt, p policy.Placement, victims []string)
}

func newTraining(cfg *TrainingConfig) *training {
	if cfg == nil {
		return nil
	}
	interval := int(cfg.Interval / time.Second)
	return &training{cfg: *cfg, mirror: map[string]*pollux.Job{},
		rounds: pollux.NewRounds(cfg.Model, pollux.Cluster{Interval: interval}, cfg.Policy)}
}

// check refuses a training job t cannot run: none configured (t nil), an
// application the model lacks, a batch size outside it.
func (t *training) check(spec *events.Job) *model.FieldError {
	if t == nil {
		return model.Errorf("training", "this cluster runs no training jobs: start it with a Pollux data folder and a training policy (cluster replay --pollux DIR)")
	}
	if _, err := t.cfg.Model.NewJob(pollux.SpecOf("check", 0, *spec.Training)); err != nil {
		field := "training.app"
		if t.cfg.Model.Apps[spec.Training.App] != nil {
			field = "training.batch"
		}
		return model.Errorf(field, "%v", err)
	}
	if _, fixed := t.cfg.Policy.(*pollux.Tiresias); fixed {
		// Tiresias runs it on exactly its replicas: refused by its GPUs
		// at every round otherwise, for ever.
		if err := t.cfg.Model.CheckReplicas(pollux.SpecOf("check", 0, *spec.Training)); err != nil {
			return model.Errorf("training.replicas", "%v", err)
		}
	}
	return nil
}

// nextRound is when the next training round falls after now (zero
// without training).
func (t *training) nextRound(now time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	k := math.Floor(now.Sub(t.cfg.Origin).Seconds()/t.cfg.Interval.Seconds()) + 1
	return t.cfg.Origin.Add(time.Duration(k) * t.cfg.Interval)
}

// submitSecond is the run's second a training job submitted at is active
// from: rounded up (a job submitted within a second is active from the
// round at or after it; the model's submission times are whole seconds,
// and a virtual run submits at them exactly).
func (t *training) submitSecond(at time.Time) int {
	return int(math.Ceil(at.Sub(t.cfg.Origin).Seconds() - 1e-9))
}

// state is a training job's state as the rounds last knew it (nil for
// another job, or without training).
func (t *training) state(j *job) *model.TrainingState {
	if t == nil || j.spec.Training == nil {
		return nil
	}
	mj, ok := t.mirror[j.id]
	if !ok {
		return nil
	}
	st := mj.State()
	return &st
}

// restore takes a job's state from its GPUs into the rounds' copy; a
// state the model cannot take is dropped, logged on log.
func (t *training) restore(id string, st model.TrainingState, log *zap.Logger) {
	mj, ok := t.mirror[id]
	if !ok {
		return
	}
	back, err := t.cfg.Model.Restore(mj.Spec, st)
	if err != nil {
		log.Warn("training state dropped", zap.String("job", id), zap.Error(err))
		return
	}
	*mj = *back
}

// requeued is a training job lost with a GPU (or otherwise sent back):
// the next round allocates it again.
func (t *training) requeued(j *job) {
	j.allocNodes, j.replicas = nil, 0 // (a job read back: no allocation to keep now)
	if t == nil {
		return
	}
	t.rounds.Unplace(j.id)
	if mj, ok := t.mirror[j.id]; ok && len(mj.Placement) > 0 {
		// Placed by its GPUs' state (read back, or a journal record) but
		// never by this scheduler's rounds: un-placed all the same.
		mj.Reallocate(nil)
	}
}

// unplace takes back a job's allocation whose placement was refused: the
// next round allocates it again.
func (tr *training) unplace(id string) { tr.rounds.Unplace(id) }

// add takes a training job into the rounds (false: the model refused it,
// which its checks make unlikely: said in the log).
func (tr *training) add(j *job, now time.Time) bool {
	mj, err := tr.rounds.Add(pollux.SpecOf(j.id, tr.submitSecond(now), *j.spec.Training))
	if err != nil { // checked by check
		tr.log.Error("training job not added", zap.String("job", j.id), zap.Error(err))
		return false
	}
	tr.mirror[j.id] = mj
	return true
}

// runRound starts the round at the interval now falls on: each
// placed job's state is read from its first GPU (a describe, answered
// with the job stepped to this second), then the round decides.
func (tr *training) runRound() {
	if tr == nil {
		return
	}
	if tr.waiting > 0 {
		tr.log.Warn("training round skipped: the last one still waits for job states", zap.Int("waiting", tr.waiting))
		return
	}
	for _, j := range tr.running.list {
		if j.spec.Training != nil && j.relearning {
			// Read back after a restart from some of its GPUs only: the
			// round would see it on fewer nodes than it runs on (or its
			// other GPUs not at all) and stop it to place it again. The
			// next round decides, once it is whole or stopped as broken.
			tr.log.Debug("training round skipped: a training job is still being read back", zap.String("job", j.id))
			return
		}
	}
	interval := int(tr.cfg.Interval / time.Second)
	tr.at = int(math.Floor(tr.clock.now.Sub(tr.cfg.Origin).Seconds()/float64(interval)+1e-9)) * interval
	for _, j := range tr.running.list {
		if j.spec.Training == nil || len(j.gpus) == 0 {
			continue
		}
		g := j.gpus[0]
		node := gpuNode(j, g, tr.view, tr.registry)
		number, reply := tr.calls.open(&call{node: node, gpu: g, sent: tr.clock.wall, report: j.id})
		b, _ := gojson.Marshal(events.Control{Op: events.OpDescribe, Call: number})
		tr.out.send(tr.subjects.GPUCtl(node, g), reply, b)
		tr.waiting++
	}
	if tr.waiting == 0 {
		tr.decide()
	}
}

// report takes a GPU's answer (nil: none came) with a placed
// job's state, and decides once every state is in.
func (tr *training) report(c *call, m *Msg) {
	if m != nil && !m.NoResponders {
		var rep events.ControlReply
		if err := gojson.Unmarshal(m.Data, &rep); err == nil && rep.Status != nil {
			if fe := validStatus(c.node, c.gpu, *rep.Status); fe == nil {
				for _, gj := range rep.Status.Jobs {
					if gj.JobID == c.report && gj.Training != nil {
						tr.restore(c.report, *gj.Training, tr.log)
						if j, ok := tr.jobs[c.report]; ok {
							tr.writes.touch(j) // the journal keeps the state as of each round
						}
					}
				}
			}
		}
	}
	if tr.waiting--; tr.waiting == 0 {
		tr.decide()
	}
}

// decide is the round's decision (MODEL.md §5.1 steps 4-6) and
// its enactment: stops first (the view gives their GPUs back at once),
// then placements; a job moved from one allocation to another is placed
// again once its GPUs have stopped it.
func (tr *training) decide() {
	for _, mj := range slices.Clone(tr.rounds.Jobs()) {
		if j, ok := tr.jobs[mj.Name]; !mj.Done && (!ok || j.terminal()) {
			// Cancelled: it no longer competes, nor holds its nodes.
			tr.rounds.Remove(mj.Name)
			delete(tr.mirror, mj.Name)
			continue
		}
		if !mj.Done && len(mj.Placement) == 0 {
			mj.Clock = tr.at // an unplaced job's steps move its clock only
		}
	}
	tr.nodes = tr.view.trainingNodes()
	tr.assignBack(tr.running)
	usable := trainingGPUs(tr.nodes, tr.view, tr.jobs)
	tr.rounds.Resize(usable)
	changed, err := tr.rounds.Decide(tr.at)
	if err != nil {
		tr.log.Error("training round failed", zap.Int("at_s", tr.at), zap.Error(err))
		return
	}
	var now []*pollux.Job
	for _, mj := range changed {
		j, ok := tr.jobs[mj.Name]
		if !ok || j.terminal() {
			continue
		}
		if j.negotiating != nil || j.stopping != nil {
			tr.log.Warn("training job still moving at a round", zap.String("job", j.id))
			continue
		}
		if j.state != stateRunning {
			if len(mj.Placement) > 0 {
				now = append(now, mj)
			}
			continue
		}
		again := len(mj.Placement) > 0
		tr.stops.stop(j, events.OpPreempt, tr.clock.now, tr.clock.wall, func() {
			j.preemptions++
			tr.stats.preemptions++
			tr.life.transition(j, events.JobPreempted, "round "+tr.cfg.Policy.Name()+" re-allocated its GPUs", tr.clock.now)
			tr.life.transition(j, events.JobQueued, "", tr.clock.now)
			if again {
				tr.place(j, mj, tr.running.usage())
			}
		})
	}
	short := map[string]bool{}
	// What each tenant holds, the round's placements added as they are
	// made (their reservations are still in flight).
	held := tr.running.usage()
	for _, mj := range now {
		if !tr.place(tr.jobs[mj.Name], mj, held) {
			short[mj.Name] = true
		}
	}
	tr.pending(short, usable)
}

// pending gives each active training job the round left without
// GPUs its reason (job.get, sched.pending; the same until it changes, so
// each says it once).
// usable are the GPUs of each node the round could allocate.
func (tr *training) pending(short map[string]bool, usable []int) {
	gpus := 0
	for _, n := range tr.nodes {
		gpus += len(n.gpus)
	}
	free := 0
	for _, g := range usable {
		free += g
	}
	_, fixed := tr.cfg.Policy.(*pollux.Tiresias)
	for _, mj := range tr.rounds.Jobs() {
		j, ok := tr.jobs[mj.Name]
		if !ok || j.state != events.JobQueued || mj.Done || mj.Submit > tr.at || len(tr.rounds.Nodes(mj.Name)) > 0 {
			continue
		}
		if short[mj.Name] {
			continue // its allocation found too few free GPUs: place said so
		}
		reason := "waits for the " + tr.cfg.Policy.Name() + " round to allocate it GPUs"
		switch want := j.spec.Training.Replicas; {
		case fixed && want > gpus:
			reason = fmt.Sprintf("asks for %d replicas and the cluster has %d GPUs: %s runs a job on exactly its replicas",
				want, gpus, tr.cfg.Policy.Name())
		case fixed && want > free:
			reason = fmt.Sprintf("asks for %d replicas and %d of the cluster's %d GPUs are up and free of other kinds of job: %s runs a job on exactly its replicas",
				want, free, gpus, tr.cfg.Policy.Name())
		}
		tr.life.pending(j, reason, tr.clock.now)
	}
}

// place reserves a job's replicas on free GPUs of the nodes its
// allocation names (in the cluster's node order, each node's GPUs in
// order) and commits them: the placement of one job across nodes. False:
// too few of those GPUs were free (the job is un-allocated and says so).
func (tr *training) place(j *job, mj *pollux.Job, held usage) bool {
	list := tr.rounds.Nodes(mj.Name)
	nodes := tr.nodes
	taken := map[string]bool{}
	var p policy.Placement
	for i := 0; i < len(list); {
		k := i
		for k < len(list) && list[k] == list[i] {
			k++
		}
		if list[i] >= len(nodes) {
			break
		}
		want := k - i
		for _, g := range nodes[list[i]].gpus {
			if want == 0 {
				break
			}
			if gs := tr.view.gpus[g]; gs.g.Alive && len(gs.g.Allocs) == 0 && !taken[g] {
				taken[g] = true
				p.GPUs = append(p.GPUs, g)
				p.GPUIdx = append(p.GPUIdx, gs.g.Index)
				want--
			}
		}
		i = k
	}
	if len(p.GPUs) != len(list) {
		// Taken since the round counted them (trainingGPUs), or down:
		// said once per reason, not logged at every round.
		reason := fmt.Sprintf("the %s round allocated it %d GPUs and %d were free of other jobs there",
			tr.cfg.Policy.Name(), len(list), len(p.GPUs))
		if j.reason != reason {
			tr.log.Warn("training job's allocation has no free GPUs", zap.String("job", j.id), zap.Ints("nodes", list),
				zap.Int("found", len(p.GPUs)))
		}
		tr.life.pending(j, reason, tr.clock.now)
		tr.rounds.Unplace(mj.Name)
		return false
	}
	// The tenant's limits bound training replicas as any other GPUs held:
	// an allocation past them is not placed (the job waits, saying why).
	if tr.plugins.Admit != nil {
		a := admitJob(&j.spec)
		a.GPUs = len(p.GPUs)
		if st := tr.plugins.AdmitPlace(a, held.of(j.spec.Tenant)); st != nil {
			tr.life.pending(j, "the "+tr.cfg.Policy.Name()+" round allocated it "+strconv.Itoa(len(p.GPUs))+" GPUs: "+st.Reason, tr.clock.now)
			tr.rounds.Unplace(mj.Name)
			return false
		}
		held.add(j, p.GPUs)
	}
	tr.negotiate(&attempt{job: j, preempting: true}, p, nil)
	return true
}

// controls are a training job's controls: one per GPU, on the
// GPU's own node (no node actor: a replica holds no CPU or memory of
// its node here), a reservation carrying the job's part.
func (tr *training) controls(j *job, p policy.Placement, op string, v *view, registry *nodeRegistry, ttl time.Duration, subjects events.Subjects) []ctlCall {
	calls := make([]ctlCall, 0, len(p.GPUs))
	var nodes []string
	if op == events.OpReserve {
		for _, id := range p.GPUs {
			nodes = append(nodes, gpuNode(j, id, v, registry))
		}
	}
	for _, id := range p.GPUs {
		c := events.Control{Op: op, JobID: j.id}
		if op == events.OpReserve {
			g := v.gpus[id].g
			mj := tr.mirror[j.id]
			c.TTLMillis = ttl.Milliseconds()
			c.Job = &events.Assignment{Name: j.spec.Name, Priority: j.spec.Priority, VRAM: g.VRAMTotal, Milli: policy.MilliPerGPU,
				Util: 100, Spec: &j.spec, Submitted: j.submitted, Seq: j.seq, Placement: j.placement,
				Training: &events.TrainingPart{Job: *j.spec.Training, SubmitS: mj.Submit, State: mj.State(),
					IntervalS: int(tr.cfg.Interval / time.Second), Nodes: nodes}}
		}
		calls = append(calls, ctlCall{subject: subjects.GPUCtl(gpuNode(j, id, v, registry), id), ctl: c, gpu: id})
	}
	return calls
}

// trainingNode is a node of the training cluster: its id and GPU ids.
type trainingNode struct {
	id   string
	gpus []string
}

// trainingGPUs is how many GPUs of each node the round may allocate: the
// GPUs that run a training job, and the alive ones no job holds. A GPU
// another kind of job holds (the job generator's, a trace's) or that is
// down or suspect is left out: the model counted every GPU as its own,
// and allocated those GPUs to jobs that then waited a round for nothing.
// A node's GPUs are counted one by one, so a cluster of nodes of
// different sizes is decided with each node's own.
func trainingGPUs(nodes []trainingNode, v *view, jobs map[string]*job) []int {
	out := make([]int, len(nodes))
	for i, n := range nodes {
		for _, id := range n.gpus {
			if trainingMayUse(v.gpus[id], jobs) {
				out[i]++
			}
		}
	}
	return out
}

// trainingMayUse reports whether a round may allocate gs: it runs (or is
// being placed with) only training jobs, or it is alive and free.
func trainingMayUse(gs *gpuState, jobs map[string]*job) bool {
	if len(gs.g.Allocs) == 0 {
		return gs.g.Alive
	}
	for _, a := range gs.g.Allocs {
		if j, ok := jobs[a.Owner]; !ok || j.spec.Training == nil {
			return false
		}
	}
	return true
}

// gpuNode is the node of a job's GPU: the job's node, or for a job across
// nodes, the GPU's own.
func gpuNode(j *job, g string, v *view, nodes *nodeRegistry) string {
	if j.node != "" {
		return j.node
	}
	if gs, ok := v.gpus[g]; ok {
		return gs.status.Node
	}
	if h, ok := nodes.heardOf(g); ok {
		return h.node // named by its node's heartbeat, not read yet (hung)
	}
	return ""
}

// naturalCompare orders ids with their numbers compared as numbers.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(a[:da], 10, 64)
			nb, _ := strconv.ParseUint(b[:db], 10, 64)
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return strings.Compare(a[:1], b[:1])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// Reading training jobs back after a restart. A training job's replicas
// span nodes: it is read back from every GPU of its placement, whatever
// node (runsOnNode), as many as its allocation lists (sharesWanted), and
// it goes back into the training rounds with the model state its GPU
// reports and the allocation it runs on, so the next round neither
// forgets it (its replicas were released as strays, and it ran on one
// GPU alone) nor re-allocates it for nothing.

// adoptedNode is the node a job read back from a GPU of node st.Node
// runs on: none for a training job (its replicas span nodes).
func adoptedNode(a *events.Assignment, st events.GPUStatus) string {
	if a.Spec != nil && a.Spec.Training != nil {
		return ""
	}
	return st.Node
}

// runsOnNode says whether the job's placement may hold a GPU of node: its
// own node's, or any for a training job.
func (j *job) runsOnNode(node string) bool {
	return j.node == node || j.spec.Training != nil
}

// takeBack puts a training job taken back after a restart into the
// training rounds, in submission order, with the model state st (nil:
// as submitted) and, for one read back from a GPU, the allocation its
// assignment a lists (kept at the next round: assignBack).
func (tr *training) takeBack(j *job, st *model.TrainingState, a *events.Assignment, jobs map[string]*job, log *zap.Logger) {
	if tr == nil || j.spec.Training == nil {
		return
	}
	if _, known := tr.mirror[j.id]; known {
		return
	}
	second := tr.submitSecond(j.submitted)
	if a != nil && a.Training != nil {
		second = a.Training.SubmitS
		j.allocNodes = slices.Clone(a.Training.Nodes)
		j.replicas = len(a.Training.Nodes)
	}
	if j.replicas == 0 && st != nil {
		for _, n := range st.Placement {
			j.replicas += n // (a GPU that ran it before the nodes were listed)
		}
	}
	spec := pollux.SpecOf(j.id, second, *j.spec.Training)
	mj, err := tr.rounds.New(spec)
	if err == nil && st != nil {
		mj, err = tr.cfg.Model.Restore(spec, *st)
	}
	if err != nil {
		log.Error("training job not taken back into the rounds", zap.String("job", j.id), zap.Error(err))
		return
	}
	// In submission order, whichever GPU answered first (the order the
	// policy reads the jobs in).
	tr.rounds.Insert(mj, func(other *pollux.Job) bool {
		o, ok := jobs[other.Name]
		return other.Submit > mj.Submit || (other.Submit == mj.Submit && ok && o.seq > j.seq)
	})
	tr.mirror[j.id] = mj
}

// assignBack gives the rounds, before a decision, the allocation
// each training job read back after a restart runs on, as node indices of
// this round's nodes. One whose allocation names a node not heard from
// gets none: the round allocates it again, stopping it first.
func (tr *training) assignBack(running *runningJobs) {
	index := map[string]int{}
	for i, n := range tr.nodes {
		index[n.id] = i
	}
	for _, j := range running.list {
		if j.allocNodes == nil {
			continue
		}
		nodes := j.allocNodes
		j.allocNodes = nil
		list := make([]int, 0, len(nodes))
		for _, n := range nodes {
			i, ok := index[n]
			if !ok {
				break
			}
			list = append(list, i)
		}
		if len(list) == len(nodes) && len(list) > 0 {
			tr.rounds.Assign(j.id, list)
		}
	}
}

// queueShown is the queue as a snapshot lists it: the queue, then the
// training jobs that wait for a round (in no queue: the rounds order
// them) in submission order. Before, jobs_queued counted them and the
// snapshot's queue did not list them.
func queueShown(q *waitQueue, t *training, jobs map[string]*job) []*job {
	waiting := t.queuedJobs(jobs)
	if len(waiting) == 0 {
		return q.jobs
	}
	return append(slices.Clone(q.jobs), waiting...)
}

// queued counts the jobs waiting: the queue's, and the training jobs
// waiting for a round (which are in no queue).
func queued(q *waitQueue, t *training, jobs map[string]*job) int {
	return q.len() + len(t.queuedJobs(jobs))
}

// queuedJobs are the training jobs that wait for a round, in
// submission order.
func (t *training) queuedJobs(jobs map[string]*job) []*job {
	if t == nil {
		return nil
	}
	var waiting []*job
	for _, mj := range t.rounds.Jobs() {
		if j, ok := jobs[mj.Name]; ok && j.state == events.JobQueued {
			waiting = append(waiting, j)
		}
	}
	return waiting
}
