package core

import (
	"maps"
	"strings"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
)

// learnClass counts a submitted job in the class distribution the
// fragmentation measure uses when the config fixes no workload. A job
// sized by VRAM counts with the share its VRAM takes of the cluster's most
// common GPU (taken when the workload is built: refreshWorkload).
func (s *Core) learnClass(spec *events.Job) {
	if s.cfg.Workload != nil {
		return
	}
	models := strings.Join(spec.Models, "|")
	if spec.Milli == 0 && spec.GPUs > 0 {
		s.byVRAM[vramClass{cpuMilli: spec.CPUMilli(), vram: int64(spec.VRAM), gpus: spec.GPUs, models: models}]++
	} else {
		s.classes[policy.ClassKey{CPUMilli: spec.CPUMilli(), Milli: spec.Milli, GPUs: spec.GPUs, Models: models}]++
	}
	s.workloadStale = true
}

// vramClass is the class of a job sized by VRAM, before its share of a
// GPU is known.
type vramClass struct {
	cpuMilli, vram int64
	gpus           int
	models         string
}

// commonVRAM is the VRAM of the cluster's most common GPU size, counted
// again only when GPUs joined since (not on every submission); a tie goes
// to the smaller size, whatever order the GPUs joined in.
func (s *Core) commonVRAM() int64 {
	if n := len(s.view.cluster.GPUs); n != s.commonFor {
		count := map[int64]int{}
		for _, g := range s.view.cluster.GPUs {
			count[g.VRAMTotal]++
		}
		var best int64
		for size, c := range count {
			if c > count[best] || (c == count[best] && size < best) {
				best = size
			}
		}
		s.common, s.commonFor = best, n
		s.workloadStale = s.workloadStale || len(s.byVRAM) > 0
	}
	return s.common
}

// refreshWorkload rebuilds the typical classes from the counts when they
// changed (or the most common GPU did), before a decision or a measure
// needs them.
func (s *Core) refreshWorkload() {
	var common int64
	if len(s.byVRAM) > 0 {
		common = s.commonVRAM() // marks the workload stale if the GPUs changed
	}
	if !s.workloadStale {
		return
	}
	counts := s.classes
	if len(s.byVRAM) > 0 {
		counts = maps.Clone(s.classes)
		for k, n := range s.byVRAM {
			counts[policy.ClassKey{CPUMilli: k.cpuMilli, Milli: policy.MilliOf(0, k.vram, common), GPUs: k.gpus, Models: k.models}] += n
		}
	}
	s.view.cluster.Workload = policy.TypicalWorkload(counts)
	s.workloadStale = false
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
	s.freeAtNode(j.node, j.id)
	s.releaseNode(j, j.node)
	s.stats.completed++
	s.ended(j)
	s.dirty = true
	s.transition(j, events.JobCompleted, "")
}
