package core

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/policy"
)

// jobClasses counts the submitted jobs by class: the workload the
// fragmentation measure and FGD read when the config fixes none. A job
// sized by VRAM is counted by its VRAM, and its share of a GPU is taken
// only when the workload is built, against the cluster's most common GPU
// then, so that the workload does not depend on the order the GPUs and
// jobs were learned in (a restarted scheduler re-learns both at once).
type jobClasses struct {
	byShare map[policy.ClassKey]int
	byVRAM  map[vramClass]int
	// stale says the counts (or the most common GPU) changed since the
	// workload was built.
	stale bool
	// common is the most common GPU VRAM, counted over commonFor GPUs.
	common    int64
	commonFor int
	// fixed says the config fixes the workload: nothing is counted.
	fixed bool
}

func newJobClasses(fixed bool) *jobClasses {
	return &jobClasses{byShare: map[policy.ClassKey]int{}, byVRAM: map[vramClass]int{}, fixed: fixed}
}

// learn counts a submitted job (unless the workload is fixed).
func (c *jobClasses) learn(spec *events.Job) {
	if c.fixed {
		return
	}
	models := strings.Join(spec.Models, "|")
	if spec.Milli == 0 && spec.GPUs > 0 {
		c.byVRAM[vramClass{cpuMilli: spec.CPUMilli(), vram: int64(spec.VRAM), gpus: spec.GPUs, models: models}]++
	} else {
		c.byShare[policy.ClassKey{CPUMilli: spec.CPUMilli(), Milli: spec.Milli, GPUs: spec.GPUs, Models: models}]++
	}
	c.stale = true
}

// vramClass is the class of a job sized by VRAM, before its share of a
// GPU is known.
type vramClass struct {
	cpuMilli, vram int64
	gpus           int
	models         string
}

// commonVRAM is the VRAM of the most common GPU size of gpus, counted
// again only when GPUs joined since (not on every submission); a tie goes
// to the smaller size, whatever order the GPUs joined in.
func (c *jobClasses) commonVRAM(gpus []*policy.GPU) int64 {
	if n := len(gpus); n != c.commonFor {
		count := map[int64]int{}
		for _, g := range gpus {
			count[g.VRAMTotal]++
		}
		var best int64
		for size, n := range count {
			if n > count[best] || (n == count[best] && size < best) {
				best = size
			}
		}
		c.common, c.commonFor = best, n
		c.stale = c.stale || len(c.byVRAM) > 0
	}
	return c.common
}

// typical is the workload the counts make on a cluster of gpus, and
// whether it changed since the last one (false: keep that one).
func (c *jobClasses) typical(gpus []*policy.GPU) (*policy.Workload, bool) {
	var common int64
	if len(c.byVRAM) > 0 {
		common = c.commonVRAM(gpus) // stale if the GPUs changed
	}
	if !c.stale {
		return nil, false
	}
	counts := c.byShare
	if len(c.byVRAM) > 0 {
		counts = maps.Clone(c.byShare)
		for k, n := range c.byVRAM {
			counts[policy.ClassKey{CPUMilli: k.cpuMilli, Milli: policy.MilliOf(0, k.vram, common), GPUs: k.gpus, Models: k.models}] += n
		}
	}
	c.stale = false
	return policy.TypicalWorkload(counts), true
}

// finishCPUJobs completes the CPU-only jobs whose run time is over: no GPU
// actor times them, so the scheduler does, on the simulated clock.
func (s *Core) finishCPUJobs() {
	now := s.now
	for _, j := range slices.Clone(s.running.list) {
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
	s.out.freeAtNode(j.node, j.id)
	s.view.releaseNode(j, j.node)
	s.stats.completed++
	s.running.remove(j)
	s.dirty = true
	s.life.transition(j, events.JobCompleted, "", s.now)
}
