package scheduler

import (
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/gpusched/gpusched/events"
)

// metrics summarises the view now. Energy is each GPU's last reported
// energy plus its last reported power for the simulated time since.
func (s *Scheduler) metrics() events.Metrics {
	now := s.cfg.Clock.Now()
	m := events.Metrics{Policy: s.policy.Name(), GPUs: len(s.view.cluster.GPUs), JobsQueued: len(s.queue),
		JobsCompleted: s.stats.completed, JobsRejected: s.stats.rejected, JobsCancelled: s.stats.cancelled,
		Preemptions: s.stats.preemptions}
	for _, n := range s.view.cluster.Nodes {
		m.Nodes++
		if n.Alive {
			m.NodesAlive++
		}
	}
	var utilSum, energyJ float64
	for _, g := range s.view.cluster.GPUs {
		gs := s.view.gpus[g.ID]
		used := g.VRAMUsed()
		m.VRAMUsed += used
		m.VRAMTotal += g.VRAMTotal
		if len(g.Allocs) > 0 {
			m.GPUsBusy++
		}
		utilSum += min(g.Util, 100)
		m.FragmentedVRAM += g.VRAMTotal - used - s.view.cluster.LargestFree(g)
		m.PowerW += gs.status.PowerW
		energyJ += gs.status.EnergyJ + gs.status.PowerW*max(0, now.Sub(gs.statusAt).Seconds())
	}
	if m.GPUs > 0 {
		m.UtilMean = utilSum / float64(m.GPUs)
	}
	// 3.6e6 joules make one kilowatt-hour.
	m.EnergyKWh = energyJ / 3.6e6
	m.JobsRunning = len(s.running)
	return m
}

func (s *Scheduler) publishMetrics() {
	if err := s.emit.Emit(s.cfg.Subjects.Metrics(), events.Type("metrics", "cluster"), "", s.cfg.Clock.Now(), s.metrics()); err != nil {
		s.log.Warn("metrics publish failed", zap.Error(err))
	}
}

// Snapshot page sizes: at 100,000 GPUs a page stays far below NATS's
// default 1 MB payload (a GPU entry is about 1 KB with a few jobs).
const (
	snapshotGPUsPerPage = 256
	snapshotJobsPerPage = 256
)

func (s *Scheduler) onSnapshot(m *nats.Msg) {
	var req events.SnapshotRequest
	if !decodeRequest(m, &req) {
		return
	}
	if !validPage(m, req.Page) {
		return
	}
	running := s.running
	gpus := s.view.sorted().GPUs
	pages := max(1, ceilDiv(len(gpus), snapshotGPUsPerPage), ceilDiv(len(running), snapshotJobsPerPage), ceilDiv(len(s.queue), snapshotJobsPerPage))
	snap := events.Snapshot{SimTime: s.cfg.Clock.Now(), Policy: s.policy.Name(), VRAMModel: string(s.view.cluster.VRAMModel),
		Summary: s.metrics(), Page: req.Page, Pages: pages,
		GPUs: []events.SnapshotGPU{}, Running: []events.JobInfo{}, Queue: []events.JobInfo{}}
	for _, g := range pageOf(gpus, req.Page, snapshotGPUsPerPage) {
		gs := s.view.gpus[g.ID]
		st := gs.status
		st.VRAMUsed = g.VRAMUsed()
		st.VRAMLargestFree = s.view.cluster.LargestFree(g)
		st.Util = g.Util
		snap.GPUs = append(snap.GPUs, events.SnapshotGPU{GPUStatus: st, Allocs: append(g.Allocs[:0:0], g.Allocs...), Alive: g.Alive})
	}
	for _, j := range pageOf(running, req.Page, snapshotJobsPerPage) {
		snap.Running = append(snap.Running, s.info(j, false))
	}
	for _, j := range pageOf(s.queue, req.Page, snapshotJobsPerPage) {
		snap.Queue = append(snap.Queue, s.info(j, false))
	}
	events.Reply(m, snap)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func pageOf[T any](xs []T, page, size int) []T {
	lo := page * size
	if lo >= len(xs) {
		return nil
	}
	return xs[lo:min(len(xs), lo+size)]
}
