package core

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	gojson "github.com/goccy/go-json"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// job is the scheduler's record of one accepted job.
type job struct {
	id        string
	spec      events.Job
	seq       uint64
	submitted time.Time
	state     string
	reason    string
	// inQueue says the job is in the core's queue (enqueue, dequeue).
	inQueue bool
	// inRunning says the job is on the core's running list
	// (runningJobs.add, remove).
	inRunning bool
	history   []events.Transition
	// historyDropped counts the transitions addHistory dropped.
	historyDropped int
	started        *time.Time
	ended          *time.Time

	// Where it runs: its node and GPUs, the placement that names them
	// (see Assignment) and the incarnation of each of its GPUs that
	// accepted it; the last decision, and how often it was preempted.
	node         string
	gpus         []string
	placement    string
	incarnations map[string]int
	decision     *events.Decision
	preemptions  int
	preemptor    string
	victims      []string
	// unchecked is set on a job accepted while the scheduler warmed up,
	// until a pass has checked that it fits the cluster at all.
	unchecked bool
	// finishS is a replayed job's completion second, as the rounds
	// counted it (ReplayConfig).
	finishS *float64

	// negotiating is the placement of this job in flight (negotiate.go),
	// stopping its stop in flight (place.go).
	negotiating *negotiation
	stopping    *stopping

	jobWork
	jobSubmission
	jobReadBack
	jobAwaiting
}

// jobWork is what a job has done and how fast it goes: the work it keeps,
// its last progress reports, its stints' accounting.
type jobWork struct {
	// progress is the work (reference seconds) the job keeps: set when it
	// is stopped; while it runs the GPU actors report more.
	progress     float64
	lastProgress float64
	lastRate     float64
	lastAt       time.Time
	// shareMarks are a gang's last progress reports per GPU: its shares
	// run at their own speeds, and each GPU's statuses arrive when they do
	// (at one instant, in any order), so the gang's estimate is its slowest
	// share's, from all of them, never the last GPU heard.
	shareMarks map[string]progressMark
	shardsLeft int
	// shardsDone are the GPUs whose share of the job completed: each
	// counts once, whoever says it again (a full status's ended jobs).
	shardsDone []string
	// cpuEnds is when a running CPU-only job finishes (simulated time).
	cpuEnds *time.Time
	// firstStarted is when the job first ran; runS and idealS add up, over
	// its stints, the simulated time it ran and the time the same work
	// would have taken alone on the same GPUs (their ratio is its slowdown
	// from co-location); lostS is work (reference seconds) lost to
	// preemptions and failures. A stint began at stintAt with stintFrom
	// progress on GPUs of relative speed stintSpeed.
	firstStarted          *time.Time
	runS, idealS, lostS   float64
	stintAt               time.Time
	stintFrom, stintSpeed float64
	// demotedAt is when the job's attained service (GPUs × run time)
	// passed policy.LASThreshold (zero: not yet); the "las" queue order
	// reads it.
	demotedAt time.Time
	// touched says the journal record changed and is not written yet;
	// storedProgress is the kept progress the last record of the running
	// job holds.
	touched        bool
	storedProgress float64
}

// jobSubmission is a job's submission on its way: stored first, answered
// and announced then (accept, stored), and remembered for a client that
// repeats it.
type jobSubmission struct {
	// accepting is the job's submission while its first record is being
	// stored (it is not a candidate for placement until stored);
	// storeAnswered says the store has answered for it.
	accepting     *Msg
	storeAnswered bool
	// unannounced holds the job's events while its first record waits
	// for the store: they go out once it is stored (announce), and never
	// if the store refuses it (refusedByStore): a job exists for the
	// world only once stored.
	unannounced    bool
	refusedByStore bool
	heldEvents     []Effect
	// queueWhenStored: not placed at once, the job is queued (and its
	// submission answered) once it is stored; answerWhenStored is the
	// answer a job that waits for rounds (training, replayed) gets then.
	queueWhenStored  bool
	answerWhenStored any
	// answer is the answer to the job's submission once given;
	// answerWaiters the reply subjects of submissions repeating its
	// idempotency key before it was (resubmitted).
	answer        []byte
	answerWaiters []string
	// submission is the submission as it came (its request, re-encoded,
	// the job id left out), kept for a job a client keyed (its job_id or
	// Nats-Msg-Id): a repeat of the key with another request is refused,
	// not taken for a retry (resubmitted). Not journaled: a job read back
	// after a restart takes any repeat for a retry.
	submission []byte
}

// jobReadBack is a running job a restarted scheduler is reading back
// from its GPUs.
type jobReadBack struct {
	// relearning says a job a restarted scheduler re-learned from its
	// GPUs is still being read back, share by share: a gang is whole only
	// once every GPU it ran on has been read (settleRelearned).
	// relearnFrom are the GPUs the journal says its placement ran on (nil
	// when only the predecessor's post-mortem vouched for it).
	relearning  bool
	relearnFrom []string
	// replicas is how many GPUs a training job read back after a restart
	// runs on (its allocation's length, from its GPUs), and allocNodes
	// that allocation, node by replica, for the next training round to
	// keep (training.assignBack).
	replicas   int
	allocNodes []string
}

// jobAwaiting is what a job waits for before it may run again, or be
// looked at again: GPUs that may still run it, and an end overdue.
type jobAwaiting struct {
	// awaiting names the GPUs (with their incarnation) that may still run
	// the job: a stop sent to them went unanswered. The job is not placed
	// again until each shows it stopped, or is declared dead.
	awaiting map[string]int
	// awaitAskAt is when (wall time) the GPUs it awaits are next asked
	// whether they still run it (liveness.askAwaiting).
	awaitAskAt time.Time
	// overdueAt is when (wall time) a job past its end may have its GPUs
	// read again (liveness.askOverdue).
	overdueAt time.Time
}

// endStint adds the stint that ends now, having reached progress done, to
// the job's run and ideal times.
func (j *job) endStint(now time.Time, done float64) {
	if j.stintAt.IsZero() {
		return
	}
	stint := now.Sub(j.stintAt).Seconds()
	if j.demotedAt.IsZero() {
		j.demotedAt = j.demotion(stint)
	}
	j.runS += stint
	if j.stintSpeed > 0 {
		j.idealS += max(0, done-j.stintFrom) / j.stintSpeed
	}
	j.stintAt = time.Time{}
}

// slowdown is run time over ideal time (1 when it never ran on a GPU).
func (j *job) slowdown() float64 {
	if j.idealS <= 0 {
		return 1
	}
	return j.runS / j.idealS
}

func (j *job) work() float64 { return j.spec.Work() }

// incarnationOn is the incarnation of gpu the job was placed on (0 if
// unknown: then any incarnation of that GPU is taken to run it).
func (j *job) incarnationOn(gpu string) int { return j.incarnations[gpu] }

// estimate is the job's progress now: kept progress when stopped, else the
// last reported progress advanced at the last reported rate.
func (j *job) estimate(now time.Time) float64 {
	if j.state != stateRunning {
		return j.progress
	}
	// A gang goes at its slowest unfinished share's pace; a job without
	// such reports at its last one. (Allocation-free: every share's lost
	// work is estimated at each pass that looks for victims.)
	est, found := 0.0, false
	for _, g := range j.gpus {
		if m, ok := j.shareMarks[g]; ok && !slices.Contains(j.shardsDone, g) {
			if p := m.by(now, j.work()); !found || p < est {
				est, found = p, true
			}
		}
	}
	if !found {
		return j.lastMark().by(now, j.work())
	}
	return est
}

// lastMark is the job's last progress report, from whichever GPU it was.
func (j *job) lastMark() progressMark {
	return progressMark{progress: j.lastProgress, rate: j.lastRate, at: j.lastAt}
}

// progressMark is a progress report: progress at a time, going on at rate.
type progressMark struct {
	progress, rate float64
	at             time.Time
}

// by is the progress the mark foretells by now, within [its progress, work].
func (m progressMark) by(now time.Time, work float64) float64 {
	p := m.progress + m.rate*now.Sub(m.at).Seconds()
	return min(max(p, m.progress), work)
}

// reaches is when the mark foretells work done (false: never, at no rate).
func (m progressMark) reaches(work float64) (time.Time, bool) {
	switch {
	case m.progress >= work:
		return m.at, true
	case m.rate <= 0:
		return time.Time{}, false
	}
	return m.at.Add(time.Duration((work - m.progress) / m.rate * float64(time.Second))), true
}

// admitsNow reports whether admission lets j be placed now (the pass
// asks the same over the usage it counts once for all its jobs).
func admitsNow(j *job, plugins *policy.Profile, running *runningJobs) bool {
	return plugins.Admit == nil || plugins.AdmitPlace(admitJob(&j.spec), running.usage().of(j.spec.Tenant)) == nil
}

// usage is what each tenant's running jobs hold, for admission.
type usage map[string]*tenantHold

// tenantHold is what one tenant's running jobs hold: each GPU with the
// number of its jobs on it (two sharing one GPU hold one GPU), and the
// CPU and memory they hold on their nodes.
type tenantHold struct {
	gpus     map[string]int
	cpuMilli int64
	memory   int64
}

// of is what tenant holds, as admission counts it.
func (u usage) of(tenant string) policy.Usage {
	t := u[tenant]
	if t == nil {
		return policy.Usage{}
	}
	return policy.Usage{GPUs: len(t.gpus), CPUMilli: t.cpuMilli, Memory: t.memory}
}

// add counts j as running on gpus for its tenant.
func (u usage) add(j *job, gpus []string) {
	t := u[j.spec.Tenant]
	if t == nil {
		t = &tenantHold{gpus: map[string]int{}}
		u[j.spec.Tenant] = t
	}
	for _, g := range gpus {
		t.gpus[g]++
	}
	if j.spec.Training == nil { // (a replica holds no CPU or memory of its node)
		t.cpuMilli += j.spec.CPUMilli()
		t.memory += int64(j.spec.Memory)
	}
}

// remove takes back what add counted (a placement refused).
func (u usage) remove(j *job, gpus []string) {
	t := u[j.spec.Tenant]
	if t == nil {
		return
	}
	for _, g := range gpus {
		if t.gpus[g]--; t.gpus[g] <= 0 {
			delete(t.gpus, g)
		}
	}
	if j.spec.Training == nil {
		t.cpuMilli -= j.spec.CPUMilli()
		t.memory -= int64(j.spec.Memory)
	}
}

// admitJob is what admission (policy.Admit) looks at.
func admitJob(spec *events.Job) *policy.AdmitJob {
	a := &policy.AdmitJob{Tenant: spec.Tenant, Priority: spec.Priority, GPUs: spec.GPUs}
	if spec.Training == nil {
		a.CPUMilli, a.Memory = spec.CPUMilli(), int64(spec.Memory)
	}
	return a
}

func (j *job) queued() policy.Queued {
	return policy.Queued{Priority: j.spec.Priority, Submitted: j.submitted, Seq: j.seq, GPUs: j.spec.GPUs,
		WorkS: j.work(), ProgressS: j.progress, AttainedGPUS: j.runS * float64(j.spec.GPUs), DemotedAt: j.demotedAt}
}

func (j *job) terminal() bool {
	switch j.state {
	case events.JobCompleted, events.JobCancelled, events.JobRejected:
		return true
	}
	return false
}

// stateRunning is the job state while it runs (the event that enters it is "started").
const stateRunning = events.JobRunning

// MaxHistory bounds a job's history: a job preempted, lost or re-placed
// without end (a Gavel job is, every round; a submit-and-cancel loop on a
// pinned GPU preempts its victim each time) would otherwise grow its
// job.get reply and its journal record without bound. Its first
// historyHead transitions (how it first ran) and its latest ones are
// kept; the ones between are dropped and counted (history_dropped).
const MaxHistory = 256

// historyHead is how many of a job's first transitions its history keeps.
const historyHead = 8

// addHistory records a transition in j's history, within MaxHistory.
func (j *job) addHistory(t events.Transition) {
	if len(j.history) >= MaxHistory {
		j.history = slices.Delete(j.history, historyHead, historyHead+1)
		j.historyDropped++
	}
	j.history = append(j.history, t)
}

// ownTenant makes a tenant's job its own: the submission's tenant is the
// one the credentials name; a body naming another is refused.
func ownTenant(req *events.SubmitRequest, tenant string) *model.FieldError {
	if req.Tenant != "" && req.Tenant != tenant {
		return &model.FieldError{Field: "tenant", Message: fmt.Sprintf("%q is not yours: these credentials are tenant %q's (leave tenant out)", req.Tenant, tenant)}
	}
	req.Tenant = tenant
	return nil
}

// lookup finds the job a request names; a tenant finds only its own.
func lookup(m *Msg, tenant string, jobs map[string]*job, journaled map[string]*durable.Record, out *outbox) *job {
	var ref events.JobRef
	if !out.decodeRequest(m, &ref) {
		return nil
	}
	if ref.JobID == "" {
		out.replyError(m, "job_id", "required")
		return nil
	}
	// A tenant gets the same answer for another tenant's job as for no job
	// at all: it does not learn which ids other tenants' jobs have.
	noJob := "no job " + ref.JobID
	if tenant != "" {
		noJob += " among tenant " + tenant + "'s jobs"
	}
	j, ok := jobs[ref.JobID]
	if !ok {
		if r, journaled := journaled[ref.JobID]; journaled {
			// Ran under the predecessor, not accounted for yet: the
			// journal's word until a GPU or the warm-up settles it.
			j = jobOfRecord(r)
		} else {
			out.replyError(m, "job_id", noJob)
			return nil
		}
	}
	if tenant != "" && j.spec.Tenant != tenant {
		out.replyError(m, "job_id", noJob)
		return nil
	}
	return j
}

func (s *Core) onCancel(m *Msg, tenant string) {
	j := lookup(m, tenant, s.jobs, s.restart.journaled, s.out)
	if j == nil {
		return
	}
	if _, journaled := s.restart.journaled[j.id]; journaled {
		s.out.replyError(m, "job_id", "job "+j.id+" is being re-learned from the GPUs after a scheduler restart: try again in a few seconds")
		return
	}
	if j.terminal() {
		s.out.replyError(m, "job_id", "job "+j.id+" is already "+j.state)
		return
	}
	if j.stopping != nil {
		s.out.replyError(m, "job_id", "job "+j.id+" is being stopped (preempted or lost): try again in a moment")
		return
	}
	s.intake.cancel(j, "cancelled by request", func() { s.out.reply(m, j.info(s.now, s.training, true)) })
}

func (s *Core) onStrategy(m *Msg) {
	var req events.StrategyRequest
	if !s.out.decodeRequest(m, &req) {
		return
	}
	c := &s.view.cluster
	rep := events.StrategyReply{Policy: s.plugins.Placement.Name(), Available: policy.Names[policy.Policy](), Queue: s.plugins.QueueSort.Name(), Queues: policy.Names[policy.QueueSort](),
		Filters: policy.FiltersString(c.Filters), FilterNames: policy.Names[policy.Filter](),
		Oversubscribe: events.Ratio(c.Oversubscribe), ComputeBound: c.ComputeBound}
	// Every part is checked before any changes: a request is applied whole or not at all.
	var p policy.Policy
	var qs policy.QueueSort
	var fs []policy.Filter
	switchFilters := false
	var err error
	if req.Policy != "" && req.Policy != s.plugins.Placement.Name() {
		if p, err = policy.Lookup[policy.Policy](req.Policy); err != nil {
			s.out.replyError(m, "policy", err.Error())
			return
		}
	}
	if req.Queue != "" && req.Queue != s.plugins.QueueSort.Name() {
		if qs, err = policy.Lookup[policy.QueueSort](req.Queue); err != nil {
			s.out.replyError(m, "queue", err.Error())
			return
		}
	}
	if req.Filters != "" {
		if fs, err = policy.ParseFilters(req.Filters); err != nil {
			s.out.replyError(m, "filters", err.Error())
			return
		}
		switchFilters = policy.FiltersString(fs) != rep.Filters
	}
	switchRatio := false
	if req.Oversubscribe != nil {
		if err := policy.CheckOversubscribe(float64(*req.Oversubscribe)); err != nil {
			s.out.replyError(m, "oversubscribe", err.Error())
			return
		}
		switchRatio = float64(*req.Oversubscribe) != c.Oversubscribe
	}
	if p == nil && qs == nil && !switchFilters && !switchRatio {
		s.out.reply(m, rep)
		return
	}
	changed := events.PolicyChanged{Policy: s.plugins.Placement.Name(), Queue: s.plugins.QueueSort.Name(), Oversubscribe: rep.Oversubscribe}
	if rep.Filters != "none" {
		changed.Filters = rep.Filters
	}
	if p != nil {
		rep.Previous, rep.Policy = s.plugins.Placement.Name(), p.Name()
		changed.Policy, changed.Previous = p.Name(), rep.Previous
		s.plugins.Placement = p
		s.plugins.Apply(c)
		rep.ComputeBound = c.ComputeBound
		s.log.Info("policy switched", zap.String("policy", p.Name()), zap.String("previous", rep.Previous))
	}
	if qs != nil {
		rep.PreviousQueue, rep.Queue = s.plugins.QueueSort.Name(), qs.Name()
		changed.Queue, changed.PreviousQueue = qs.Name(), rep.PreviousQueue
		s.plugins.QueueSort = qs
		s.queue.resort(s.plugins.Order)
		s.log.Info("queue order switched", zap.String("queue", qs.Name()), zap.String("previous", rep.PreviousQueue))
	}
	if switchFilters {
		rep.PreviousFilters, rep.Filters = rep.Filters, policy.FiltersString(fs)
		changed.Filters, changed.PreviousFilters = rep.Filters, rep.PreviousFilters
		s.plugins.Filters = fs
		s.plugins.Apply(c)
		s.log.Info("filters switched", zap.String("filters", rep.Filters), zap.String("previous", rep.PreviousFilters))
	}
	if switchRatio {
		prev := rep.Oversubscribe
		rep.PreviousOversubscribe, rep.Oversubscribe = &prev, *req.Oversubscribe
		changed.Oversubscribe, changed.PreviousOversubscribe = rep.Oversubscribe, rep.PreviousOversubscribe
		c.Oversubscribe = float64(rep.Oversubscribe)
		s.log.Info("oversubscription switched", zap.Float64("oversubscribe", c.Oversubscribe), zap.Float64("previous", float64(prev)))
	}
	s.out.emit(s.cfg.Subjects.SchedEvent(events.SchedPolicy), events.Type("sched", events.SchedPolicy), "",
		s.now, changed)
	s.dirty = true
	s.out.reply(m, rep)
}

// DedupeWindow is how long a submission's Nats-Msg-Id is remembered (wall
// time; JetStream's default duplicate window). A job_id in the body is
// remembered as long as the job is.
const DedupeWindow = 2 * time.Minute

// maxMsgIDs bounds the Nats-Msg-Ids remembered at once: a flood of ids
// forgets the oldest sooner.
const maxMsgIDs = 100_000

// submitted is the job a submission's idempotency key names, if any: its
// body's job_id, else its Nats-Msg-Id within DedupeWindow.
func submitted(jobID, msgID string, jobs map[string]*job, ids *msgIDs, wall time.Time) *job {
	if jobID != "" {
		return jobs[jobID]
	}
	if id, ok := ids.lookup(msgID, wall); ok {
		return jobs[id]
	}
	return nil
}

// msgIDs remembers the job each Nats-Msg-Id a submission carried made,
// for DedupeWindow of wall time and at most maxMsgIDs at once.
type msgIDs struct {
	byID map[string]msgIDJob
	// order is the ids, oldest first.
	order []string
}

// msgIDJob is the job a Nats-Msg-Id made, and when (wall time).
type msgIDJob struct {
	jobID string
	at    time.Time
}

// lookup is the job msgID made, if it is remembered at now.
func (m *msgIDs) lookup(msgID string, now time.Time) (string, bool) {
	if msgID == "" {
		return "", false
	}
	m.forget(now)
	k, ok := m.byID[msgID]
	return k.jobID, ok
}

// remember records that msgID made jobID at now ("": nothing to record).
func (m *msgIDs) remember(msgID, jobID string, now time.Time) {
	if msgID == "" {
		return
	}
	m.byID[msgID] = msgIDJob{jobID: jobID, at: now}
	m.order = append(m.order, msgID)
	m.forget(now)
}

// forget forgets the ids older than DedupeWindow at now, and the oldest
// beyond maxMsgIDs.
func (m *msgIDs) forget(now time.Time) {
	n := 0
	for n < len(m.order) {
		k := m.byID[m.order[n]]
		if now.Sub(k.at) < DedupeWindow && len(m.order)-n <= maxMsgIDs {
			break
		}
		delete(m.byID, m.order[n])
		n++
	}
	m.order = m.order[n:]
}

// resubmitted answers a submission that repeats j's idempotency key: as
// j's submission was answered (once it is), never with a second job. A
// tenant's credentials reach only their own tenant's jobs. A repeat that
// asks for something else than the first (another request under the same
// key) is no retry: it is refused naming what differs.
func (o *outbox) resubmitted(m *Msg, j *job, tenant string, submission []byte) {
	if tenant != "" && j.spec.Tenant != tenant {
		o.replyError(m, "job_id", "is taken: choose another")
		return
	}
	if differ := submissionDiff(j.submission, submission); len(differ) > 0 {
		o.replyError(m, "job_id", "was submitted before with another request ("+strings.Join(differ, ", ")+
			" differ): this is not a retry of job "+j.id+" ("+j.state+"); choose another key to submit a new job")
		return
	}
	if j.answer != nil {
		o.respond(m.Reply, j.answer)
		return
	}
	if n := j.negotiating; j.accepting != nil || n != nil && n.a.submit != nil {
		// Its first answer waits for the store or its placement: this one too.
		if m.Reply != "" {
			j.answerWaiters = append(j.answerWaiters, m.Reply)
		}
		return
	}
	// Known from the journal after a restart: the answer is what it is now.
	o.reply(m, answerNow(j))
}

// submissionOf is a submission's request as resubmitted compares it: its
// JSON, the job id left out.
func submissionOf(req events.SubmitRequest) []byte {
	req.JobID = ""
	b, _ := gojson.Marshal(req)
	return b
}

// submissionDiff names the fields two submissions (submissionOf) differ
// in, sorted; none when first is not kept (a job read back after a
// restart) or they are the same.
func submissionDiff(first, again []byte) []string {
	if len(first) == 0 || bytes.Equal(first, again) {
		return nil
	}
	var a, b map[string]gojson.RawMessage
	if gojson.Unmarshal(first, &a) != nil || gojson.Unmarshal(again, &b) != nil {
		return []string{"the request"}
	}
	var differ []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			differ = append(differ, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			differ = append(differ, k)
		}
	}
	slices.Sort(differ)
	return differ
}

// answerNow answers a submission of j as j is now (a repeated one, or one
// a dead predecessor never answered).
func answerNow(j *job) events.SubmitReply {
	return events.SubmitReply{JobID: j.id, State: j.state, Node: j.node, GPUs: j.gpus, Reason: j.reason}
}

// info is what job.get and the job events say of j at now (with its
// history when asked); tr is the training rounds' state, nil without.
func (j *job) info(now time.Time, tr *training, history bool) events.JobInfo {
	in := events.JobInfo{
		JobID: j.id, Name: j.spec.Name, Tenant: j.spec.Tenant, Priority: j.spec.Priority, State: j.state,
		GPUs: j.spec.GPUs, VRAM: int64(j.spec.VRAM), Milli: j.spec.Milli, Models: j.spec.Models, Util: j.spec.Util, CPU: j.spec.CPU, Memory: int64(j.spec.Memory),
		Duration: j.spec.Duration.String(), Preemptible: j.spec.Preemptible, Node: j.node, GPUIDs: j.gpus,
		ProgressS: j.estimate(now), WorkS: j.work(), Preemptions: j.preemptions, SubmittedAt: j.submitted,
		StartedAt: j.started, EndedAt: j.ended, Reason: j.reason, Preemptor: j.preemptor, Victims: j.victims,
		FirstStartedAt: j.firstStarted, RunS: j.runS, LostWorkS: j.lostS, Slowdown: j.slowdown(),
	}
	if j.state == stateRunning && !j.stintAt.IsZero() {
		in.RunS += now.Sub(j.stintAt).Seconds() // the stint under way, so far
	}
	if j.spec.Checkpoint > 0 {
		in.Checkpoint = j.spec.Checkpoint.String()
	}
	if j.spec.Training != nil {
		in.Duration = ""
		in.Training, in.TrainingState = j.spec.Training, tr.state(j)
	}
	if j.spec.Typed() {
		in.Duration, in.JobType, in.Steps = "", j.spec.JobType, j.spec.Steps
	}
	in.FinishS = j.finishS
	if j.stopping != nil {
		in.Reason = j.stopping.why()
	}
	if history {
		in.History, in.HistoryDropped = j.history, j.historyDropped
	}
	return in
}

// jobOrder is every job the scheduler knows in the order it was accepted
// (by sequence number), and the last sequence number given.
type jobOrder struct {
	list []*job
	seq  uint64
}

// next is a new job's sequence number.
func (o *jobOrder) next() uint64 {
	o.seq++
	return o.seq
}

// add puts a job just accepted (the latest sequence number) last.
func (o *jobOrder) add(j *job) { o.list = append(o.list, j) }

// insert puts a job taken back from the journal in its place by
// sequence number.
func (o *jobOrder) insert(j *job) {
	i, _ := slices.BinarySearchFunc(o.list, j.seq, func(x *job, seq uint64) int { return cmp.Compare(x.seq, seq) })
	o.list = slices.Insert(o.list, i, j)
}

// saw makes the numbers given from now on follow seq, a number taken
// back (from the journal, from a GPU).
func (o *jobOrder) saw(seq uint64) { o.seq = max(o.seq, seq) }
