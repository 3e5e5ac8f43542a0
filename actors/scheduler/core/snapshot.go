package core

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/vram"
)

// countLiveness sets m's counts of GPUs and nodes, and of those alive.
func (v *view) countLiveness(m *events.Metrics) {
	m.GPUs, m.GPUsAlive, m.Nodes, m.NodesAlive = len(v.cluster.GPUs), 0, len(v.cluster.Nodes), 0
	for _, n := range v.cluster.Nodes {
		if n.Alive {
			m.NodesAlive++
		}
	}
	for _, g := range v.cluster.GPUs {
		if g.Alive {
			m.GPUsAlive++
		}
	}
}

// Snapshot pages hold at most this many GPUs, running and queued jobs
// each, and at most snapshotListBytes of each list (by the entries'
// estimated size): three lists stay under NATS's default 1 MiB payload
// however many jobs share a GPU or however long their reasons are.
const (
	snapshotGPUsPerPage = 256
	snapshotJobsPerPage = 256
	snapshotListBytes   = 256 << 10
)

// pageStarts splits n entries into pages of at most perPage entries and
// at most budget bytes by cost (an entry larger than the budget gets a page
// of its own): the index each page starts at.
func pageStarts(n, perPage, budget int, cost func(i int) int) []int {
	starts := []int{0}
	count, bytes := 0, 0
	for i := range n {
		c := cost(i)
		if count > 0 && (count == perPage || bytes+c > budget) {
			starts = append(starts, i)
			count, bytes = 0, 0
		}
		count++
		bytes += c
	}
	return starts
}

// pageBounds is where page p of n entries begins and ends by starts
// (n, n past the last).
func pageBounds(n int, starts []int, p int) (lo, hi int) {
	if p >= len(starts) || n == 0 {
		return n, n
	}
	if p+1 < len(starts) {
		return starts[p], starts[p+1]
	}
	return starts[p], n
}

// pageSlice is page p of xs by starts (empty past the last).
func pageSlice[T any](xs []T, starts []int, p int) []T {
	lo, hi := pageBounds(len(xs), starts, p)
	return xs[lo:hi]
}

// Estimated encoded sizes, in bytes, of snapshot entries: a fixed part
// (the fields and their names) and what grows with the entry.
const (
	gpuEntryBytes     = 700
	gpuJobEntryBytes  = 260
	allocEntryBytes   = 70
	endedEntryBytes   = 600
	jobEntryBytes     = 800
	perIDBytes        = 48
	unknownEntryBytes = 300
)

// gpuCost estimates a GPU's snapshot entry.
func gpuCost(st events.GPUStatus, allocs int) int {
	c := gpuEntryBytes + allocEntryBytes*allocs + endedEntryBytes*len(st.Ended)
	for _, j := range st.Jobs {
		c += gpuJobEntryBytes + len(j.Name)
	}
	return c
}

// jobCost estimates a job's snapshot entry.
func jobCost(j *job) int {
	return jobEntryBytes + len(j.spec.Name) + len(j.spec.Tenant) + len(j.reason) +
		perIDBytes*(len(j.spec.Models)+len(j.gpus)+len(j.victims))
}

// A snapshot's summary and the cut of its GPU list into pages walk every
// GPU (a millisecond at 1,000 GPUs, 75 ms at 100,000 on this project's
// 2-core machine: BenchmarkSnapshotPage). Up to snapshotExactGPUs GPUs
// (and on a virtual clock) they are computed for every request; above,
// one walk is reused for
// snapshotReusePerGPU per GPU of the cluster (1 s at 100,000 GPUs), so a
// flood of snapshot requests costs the scheduler's loop one walk per
// window and each request its own page, and cannot hold heartbeats back
// until leases lapse. The entries on a page are always read afresh.
//
// The summary's counts of GPUs and nodes, and of those alive, are read
// again within a walk's window, once per snapshotCountReusePerGPU per GPU
// (10 ms at 100,000 GPUs): a read of each GPU's and node's liveness is
// about 0.25 ms at 100,000 GPUs (2.4 ns a GPU; the walk's metrics alone
// are 50 ms), so a flood costs the loop at most a fortieth of its time on
// it, and whoever waits for GPUs to join — a cluster starting its GPUs in
// waves — sees them join when they do rather than up to a window later.
const (
	snapshotExactGPUs        = 2048
	snapshotReusePerGPU      = 10 * time.Microsecond
	snapshotCountReusePerGPU = 100 * time.Nanosecond
)

// snapshotLayout is what a snapshot takes from a walk of the whole
// cluster: the summary, and the GPUs in page order with where each page
// starts.
type snapshotLayout struct {
	wall    time.Time // when it was walked (wall time)
	counted time.Time // when the summary's liveness counts were read
	summary events.Metrics
	// gpus are the ids in page order: the known GPUs by id, then the
	// unknown ones (unknownNode names their nodes).
	gpus        []string
	unknownNode map[string]string
	gpuStarts   []int
	walks       int // how many walks made a layout so far (for tests)
}

// snapshotGPU is a known GPU's snapshot entry now, as tenant sees it
// ("" sees everything); frags keeps the fragmentation of each node worked
// out so far for this page.
func (v *view) snapshotGPU(gs *gpuState, tenant string, levels *perfLevels, frags map[int][]float64, jobs map[string]*job, now time.Time) events.SnapshotGPU {
	g, st := gs.g, gs.status
	st.VRAMUsed = g.VRAMUsed()
	st.VRAMLargestFree = v.cluster.LargestFree(g)
	st.Util = g.Util
	st.MilliUsed = g.MilliUsed
	// Its meter as of now: its last reported energy plus its last
	// reported power since (as the cluster's total counts it); a GPU
	// reports only when something changes on it, and an idle one draws
	// its idle power all the while.
	st.EnergyJ += st.PowerW * max(0, now.Sub(gs.statusAt).Seconds())
	sg := events.SnapshotGPU{GPUStatus: st, Allocs: append(g.Allocs[:0:0], g.Allocs...), Alive: g.Alive, PerfLevels: levels.of[g.ID]}
	if tenant != "" {
		sg.Jobs = slices.DeleteFunc(slices.Clone(sg.Jobs), func(gj events.GPUJob) bool { return !owns(jobs, gj.JobID, tenant) })
		sg.Allocs = slices.DeleteFunc(sg.Allocs, func(a vram.Alloc) bool { return !owns(jobs, a.Owner, tenant) })
		sg.Ended, sg.JobID = nil, ""
	}
	if free := g.VRAMTotal - st.VRAMUsed; free > 0 {
		sg.VRAMFragmentation = 1 - float64(st.VRAMLargestFree)/float64(free)
	}
	n := v.cluster.Nodes[g.NodeIndex]
	parts, ok := frags[n.Index]
	if !ok {
		free := make([]int, 0, len(n.GPUs))
		for _, gi := range n.GPUs {
			free = append(free, v.cluster.GPUs[gi].MilliFree())
		}
		parts = policy.GPUFrags(v.cluster.Workload, n.Model, n.CPUFree(), free)
		frags[n.Index] = parts
	}
	if i := slices.Index(n.GPUs, g.Index); i >= 0 {
		sg.FragGPUs = parts[i] / policy.MilliPerGPU
	}
	return sg
}

// sortedIDs are the GPU ids of nodeOf in natural id order.
func sortedIDs(nodeOf map[string]string) []string {
	ids := make([]string, 0, len(nodeOf))
	for id := range nodeOf {
		ids = append(ids, id)
	}
	sortByID(ids, func(id string) string { return id })
	return ids
}

// unknownNodes are the GPUs the scheduler knows exist and has not read,
// each with its node: named by its node's heartbeat, or holding a job in
// the journal.
func unknownNodes(nodes *nodeRegistry, v *view, journaled map[string]*durable.Record) map[string]string {
	nodeOf := map[string]string{}
	nodes.unreadNodes(v.knows, nodeOf)
	for _, r := range journaled {
		for _, id := range r.GPUs {
			if _, known := v.gpus[id]; !known && nodeOf[id] == "" {
				nodeOf[id] = r.Node
			}
		}
	}
	return nodeOf
}

// ofTenant are the jobs of jobs that are tenant's.
func ofTenant(jobs []*job, tenant string) []*job {
	var own []*job
	for _, j := range jobs {
		if j.spec.Tenant == tenant {
			own = append(own, j)
		}
	}
	return own
}

// owns says whether the job with id is tenant's.
func owns(jobs map[string]*job, id, tenant string) bool {
	j, ok := jobs[id]
	return ok && j.spec.Tenant == tenant
}

// metrics summarises the view now. Energy is each GPU's last reported
// energy plus its last reported power for the simulated time since.
func (an *answers) metrics() events.Metrics {
	now := an.clock.now
	// The sums below are of floats, whose last digit depends on their
	// order: the GPUs' id order, not the order they joined in (after a
	// restart, the order they answered in: two runs of one seed differed
	// in a sample's energy_kwh).
	an.view.sorted()
	m := events.Metrics{Policy: an.plugins.Placement.Name(), Queue: an.plugins.QueueSort.Name(), JobsQueued: queued(an.queue, an.training, an.jobs),
		Incarnation: an.cfg.Incarnation}
	an.view.countLiveness(&m)
	var utilSum, energyJ float64
	for _, g := range an.view.cluster.GPUs {
		gs := an.view.gpus[g.ID]
		used := g.VRAMUsed()
		m.VRAMUsed += used
		m.VRAMTotal += g.VRAMTotal
		if len(g.Allocs) > 0 {
			m.GPUsBusy++
		}
		utilSum += min(g.Util, 100)
		m.FragmentedVRAM += g.VRAMTotal - used - an.view.cluster.LargestFree(g)
		m.PowerW += gs.status.PowerW
		energyJ += gs.status.EnergyJ + gs.status.PowerW*max(0, now.Sub(gs.statusAt).Seconds())
	}
	if m.GPUs > 0 {
		m.UtilMean = utilSum / float64(m.GPUs)
	}
	if free := m.VRAMTotal - m.VRAMUsed; free > 0 {
		m.VRAMFragmentation = float64(m.FragmentedVRAM) / float64(free)
	}
	an.view.refreshWorkload(an.classes)
	f := an.view.cluster.Fragmentation()
	m.MilliUsed, m.MilliTotal = f.Used, f.Used+f.Free
	if m.MilliTotal > 0 {
		m.Allocation = float64(f.Used) / float64(m.MilliTotal)
	}
	m.FragAmount = f.Amount / policy.MilliPerGPU
	m.FragRatio = f.Ratio()
	if w := an.view.cluster.Workload; w != nil {
		m.WorkloadClasses = len(w.Classes)
	}
	// The totals never decrease: energy is the most reported so far (the
	// view's sum dips while a restarted scheduler re-learns its GPUs), on
	// top of a previous process's.
	an.stats.energy(energyJ)
	t := an.stats.totals()
	m.JobsCompleted, m.JobsRejected, m.JobsCancelled, m.Preemptions = t.Completed, t.Rejected, t.Cancelled, t.Preemptions
	m.GPUDeaths, m.JobsLost, m.JobsAdopted, m.StaleIgnored = t.GPUDeaths, t.JobsLost, t.JobsAdopted, t.StaleIgnored
	// 3.6e6 joules make one kilowatt-hour.
	m.EnergyKWh = t.EnergyJ / 3.6e6
	m.JobsRunning = an.running.len()
	m.GPUsUnknown = len(unknownNodes(an.nodes, an.view, an.owed.journaled))
	m.Settling = m.GPUsUnknown > 0 || an.recovery.stillResuming() > 0
	return m
}

// publishMetrics emits the metrics event (TimerMetrics).
func (an *answers) publishMetrics() {
	an.out.emit(an.cfg.Subjects.Metrics(), events.Type("metrics", "cluster"), "", an.clock.now, an.metrics())
}

// snapshotLayout is the layout of a snapshot now: the last one while it
// may be reused, else a new walk.
func (an *answers) snapshotLayout() *snapshotLayout {
	l := &an.layout
	n := len(an.view.cluster.GPUs) + len(l.unknownNode)
	// Not on a virtual clock: its wall time is simulated time, which
	// stands still while a run is held (a cluster joining waits for its
	// snapshots' counts to move), and nothing outside a run floods it.
	if l.gpus != nil && !an.cfg.Virtual && n > snapshotExactGPUs && an.clock.wall.Sub(l.wall) < time.Duration(n)*snapshotReusePerGPU && !an.clock.wall.Before(l.wall) {
		if an.clock.wall.Sub(l.counted) >= time.Duration(n)*snapshotCountReusePerGPU {
			l.counted = an.clock.wall
			an.view.countLiveness(&l.summary)
		}
		return l
	}
	l.wall, l.counted, l.walks = an.clock.wall, an.clock.wall, l.walks+1
	l.summary = an.metrics()
	known := an.view.sorted().GPUs
	l.unknownNode = unknownNodes(an.nodes, an.view, an.owed.journaled)
	unknown := sortedIDs(l.unknownNode)
	l.gpus = make([]string, 0, len(known)+len(unknown))
	for _, g := range known {
		l.gpus = append(l.gpus, g.ID)
	}
	l.gpus = append(l.gpus, unknown...)
	l.gpuStarts = pageStarts(len(l.gpus), snapshotGPUsPerPage, snapshotListBytes, func(i int) int {
		if i >= len(known) {
			return unknownEntryBytes
		}
		return gpuCost(an.view.gpus[known[i].ID].status, len(known[i].Allocs))
	})
	return l
}

// snapshot answers cluster.snapshot: a page of the GPUs (those known to
// exist and not read yet shown as unknown), the running and the waiting
// jobs (a tenant's own only), with the summary of the layout's walk.
func (an *answers) snapshot(m *Msg, tenant string) {
	var req events.SnapshotRequest
	if !an.out.decodeRequest(m, &req) {
		return
	}
	if !an.out.validPage(m, req.Page) {
		return
	}
	running, queue := an.running.list, queueShown(an.queue, an.training, an.jobs)
	if tenant != "" {
		// A tenant sees the cluster (GPUs, summary) but only its own jobs.
		running, queue = ofTenant(running, tenant), ofTenant(queue, tenant)
	}
	layout := an.snapshotLayout()
	if req.SummaryOnly {
		an.out.reply(m, events.Snapshot{SimTime: an.clock.now, Speed: an.cfg.Speed, Policy: an.plugins.Placement.Name(),
			VRAMModel: string(an.view.cluster.VRAMModel), Summary: layout.summary, Pages: 1,
			GPUs: []events.SnapshotGPU{}, Running: []events.JobInfo{}, Queue: []events.JobInfo{}})
		return
	}
	// The job lists are cut afresh: O(jobs) arithmetic, no encoding.
	jobCosts := func(jobs []*job) func(int) int { return func(i int) int { return jobCost(jobs[i]) } }
	runningStarts := pageStarts(len(running), snapshotJobsPerPage, snapshotListBytes, jobCosts(running))
	queueStarts := pageStarts(len(queue), snapshotJobsPerPage, snapshotListBytes, jobCosts(queue))
	pages := max(len(layout.gpuStarts), len(runningStarts), len(queueStarts))
	if !an.out.pageExists(m, req.Page, pages) {
		return
	}
	snap := events.Snapshot{SimTime: an.clock.now, Speed: an.cfg.Speed, Policy: an.plugins.Placement.Name(), VRAMModel: string(an.view.cluster.VRAMModel),
		Summary: layout.summary, Page: req.Page, Pages: pages,
		GPUs: []events.SnapshotGPU{}, Running: []events.JobInfo{}, Queue: []events.JobInfo{}}
	levels := an.view.perfLevels()
	if len(levels.count) > 0 {
		snap.PerfLevelCounts = levels.count
	}
	frags := map[int][]float64{} // node index → its GPUs' parts of F_n(M)
	for _, id := range pageSlice(layout.gpus, layout.gpuStarts, req.Page) {
		gs, known := an.view.gpus[id]
		if !known {
			// Known to exist but not read yet (a heartbeat named it, or the
			// journal has a job on it, and no status has come: a restarted
			// scheduler re-learning its cluster, a GPU that does not
			// answer): shown as unknown rather than left out as if gone.
			snap.GPUs = append(snap.GPUs, events.SnapshotGPU{GPUStatus: events.GPUStatus{GPU: id, Node: layout.unknownNode[id], Jobs: []events.GPUJob{}},
				Allocs: []vram.Alloc{}, Unknown: true})
			continue
		}
		snap.GPUs = append(snap.GPUs, an.view.snapshotGPU(gs, tenant, levels, frags, an.jobs, an.clock.now))
	}
	for _, j := range pageSlice(running, runningStarts, req.Page) {
		snap.Running = append(snap.Running, j.info(an.clock.now, an.training, false))
	}
	for _, j := range pageSlice(queue, queueStarts, req.Page) {
		snap.Queue = append(snap.Queue, j.info(an.clock.now, an.training, false))
	}
	an.out.reply(m, snap)
}
