package core

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
)

// answers are the answers to the requests that read: job.get, job.list,
// job.explain, cluster.snapshot (with the walk of the cluster it reuses,
// layout) and the metrics. They decide nothing and change no job: the
// metrics count a restart's jobs still being re-learned as they stand
// (recovery.stillResuming), without settling them.
type answers struct {
	layout snapshotLayout

	cfg      *Config
	clock    *instant
	jobs     map[string]*job
	order    *jobOrder
	queue    *waitQueue
	running  *runningJobs
	training *training
	view     *view
	nodes    *nodeRegistry
	owed     *restart
	classes  *jobClasses
	plugins  *policy.Profile
	stats    *totals
	recovery *recovery
	out      *outbox
}

// jobListPage is the number of jobs in one page of job.list.
const jobListPage = 100

// get answers job.get: the job the request names, as its tenant may see
// it (a job the journal says ran and no GPU has shown yet included).
func (an *answers) get(m *Msg, tenant string) {
	if j := lookup(m, tenant, an.jobs, an.owed.journaled, an.out); j != nil {
		an.out.reply(m, j.info(an.clock.now, an.training, true))
	}
}

// list answers job.list: a page of the jobs in acceptance order, of one
// state or tenant if asked (a tenant sees its own only).
func (an *answers) list(m *Msg, tenant string) {
	var req events.JobListRequest
	if !an.out.decodeRequest(m, &req) {
		return
	}
	if tenant != "" {
		if req.Tenant != "" && req.Tenant != tenant {
			an.out.replyError(m, "tenant", fmt.Sprintf("%q is not yours: these credentials list tenant %q's jobs only", req.Tenant, tenant))
			return
		}
		req.Tenant = tenant
	}
	if !an.out.validPage(m, req.Page) {
		return
	}
	if req.State != "" && !slices.Contains(events.JobStates, req.State) {
		an.out.replyError(m, "state", fmt.Sprintf("unknown state %q: one of %s", req.State, strings.Join(events.JobStates, ", ")))
		return
	}
	var match []*job
	for _, j := range an.order.list {
		if (req.State == "" || j.state == req.State) && (req.Tenant == "" || j.spec.Tenant == req.Tenant) {
			match = append(match, j)
		}
	}
	if len(an.owed.journaled) > 0 {
		for _, r := range an.owed.journaled {
			if j := jobOfRecord(r); (req.State == "" || j.state == req.State) && (req.Tenant == "" || j.spec.Tenant == req.Tenant) {
				match = append(match, j)
			}
		}
		slices.SortFunc(match, func(a, b *job) int { return cmp.Compare(a.seq, b.seq) })
	}
	pages := max(1, (len(match)+jobListPage-1)/jobListPage)
	if !an.out.pageExists(m, req.Page, pages) {
		return
	}
	rep := events.JobListReply{Page: req.Page, Pages: pages, Total: len(match), Jobs: []events.JobInfo{}}
	for i := req.Page * jobListPage; i < min(len(match), (req.Page+1)*jobListPage); i++ {
		rep.Jobs = append(rep.Jobs, match[i].info(an.clock.now, an.training, false))
	}
	an.out.reply(m, rep)
}

// explain answers job.explain: the job's last placement decision (its
// candidates, refusals, victims), or why it waits.
func (an *answers) explain(m *Msg, tenant string) {
	j := lookup(m, tenant, an.jobs, an.owed.journaled, an.out)
	if j == nil {
		return
	}
	d := events.Decision{JobID: j.id, Policy: an.plugins.Placement.Name(), State: j.state, Reason: j.reason}
	if j.decision != nil {
		d = *j.decision
		d.State = j.state
		if j.state == events.JobQueued {
			d.Reason = j.reason
		}
	}
	an.out.reply(m, d)
}
