package core

import (
	"strings"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/policy"
)

// learnClass counts a submitted job in the class distribution the
// fragmentation measure uses when the config fixes no workload. A job
// sized by VRAM counts with the share its VRAM takes of the cluster's most
// common GPU.
func (s *Core) learnClass(spec *model.Job) {
	if s.cfg.Workload != nil {
		return
	}
	milli := spec.Milli
	if milli == 0 && spec.GPUs > 0 {
		milli = policy.MilliOf(0, int64(spec.VRAM), s.commonVRAM())
	}
	key := policy.ClassKey{CPUMilli: spec.CPUMilli(), Milli: milli, GPUs: spec.GPUs, Models: strings.Join(spec.Models, "|")}
	s.classes[key]++
	s.workloadStale = true
}

// commonVRAM is the VRAM of the cluster's most common GPU size, counted
// again only when GPUs joined since (not on every submission).
func (s *Core) commonVRAM() int64 {
	if n := len(s.view.cluster.GPUs); n != s.commonFor {
		count := map[int64]int{}
		var best int64
		for _, g := range s.view.cluster.GPUs {
			count[g.VRAMTotal]++
			if count[g.VRAMTotal] > count[best] {
				best = g.VRAMTotal
			}
		}
		s.common, s.commonFor = best, n
	}
	return s.common
}

// refreshWorkload rebuilds the typical classes from the counts when they
// changed, before a decision or a measure needs them.
func (s *Core) refreshWorkload() {
	if s.workloadStale {
		s.view.cluster.Workload = policy.TypicalWorkload(s.classes)
		s.workloadStale = false
	}
}

// finishCPUJobs completes the CPU-only jobs whose run time is over: no GPU
// actor times them, so the scheduler does, on the simulated clock.
func (s *Core) finishCPUJobs() {
	now := s.now
	for _, j := range append([]*job(nil), s.running...) {
		if j.cpuEnds != nil && !now.Before(*j.cpuEnds) {
			s.complete(j, now)
		}
	}
}

// complete ends a running job that did all its work: the node gets its
// CPU and memory back.
func (s *Core) complete(j *job, now time.Time) {
	j.endStint(now, j.work())
	j.progress = j.work()
	j.ended = &now
	j.cpuEnds = nil
	s.publishAll([]ctlCall{{subject: s.cfg.Subjects.NodeCtl(j.node), ctl: events.Control{Op: events.OpRelease, JobID: j.id}}})
	s.releaseNode(j, j.node)
	s.stats.completed++
	s.ended(j)
	s.dirty = true
	s.transition(j, events.JobCompleted, "")
}
