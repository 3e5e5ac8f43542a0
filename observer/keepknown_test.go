package observer

import (
	"testing"

	"github.com/gpusched/gpusched/events"
)

// TestUnknownIsNeverShownAsZero (issue 45 item 4): while a restarted
// scheduler re-learns the cluster, a GPU it has not read yet keeps its
// last known figures (stale), one it does not even name yet stays on the
// picture, and the summary and job lists are the last settled ones —
// not its partial zeros; once it has settled, its figures are shown.
func TestUnknownIsNeverShownAsZero(t *testing.T) {
	w := &Watcher{}
	gpu := func(id string, util float64, unknown bool) events.SnapshotGPU {
		return events.SnapshotGPU{GPUStatus: events.GPUStatus{GPU: id, Model: "A100-40GB", Util: util, VRAMTotal: 40 << 30, PowerW: 300}, Alive: !unknown, Unknown: unknown}
	}
	settled := &events.Snapshot{Summary: events.Metrics{GPUs: 3, JobsRunning: 2, JobsQueued: 1, PowerW: 900, UtilMean: 60},
		GPUs:    []events.SnapshotGPU{gpu("gpu-0", 80, false), gpu("gpu-1", 50, false), gpu("gpu-2", 50, false)},
		Running: []events.JobInfo{{JobID: "a"}, {JobID: "b"}}, Queue: []events.JobInfo{{JobID: "c"}}}
	w.keepKnown(settled)
	// Restarted: gpu-0 read, gpu-1 known to exist but not read, gpu-2 not
	// even named; no job read back yet.
	partial := &events.Snapshot{Summary: events.Metrics{GPUs: 1, GPUsUnknown: 1, Settling: true, Incarnation: 2, PowerW: 300},
		GPUs: []events.SnapshotGPU{gpu("gpu-0", 80, false), gpu("gpu-1", 0, true)}}
	got := w.keepKnown(partial)
	if len(got.GPUs) != 3 {
		t.Fatalf("%d GPUs on the picture, want the 3 known", len(got.GPUs))
	}
	for _, g := range got.GPUs[1:] {
		if !g.Unknown || !g.Stale || g.Util != 50 || g.VRAMTotal == 0 {
			t.Errorf("%s: unknown %v stale %v util %v vram %v, want its last known figures, marked stale", g.GPU, g.Unknown, g.Stale, g.Util, g.VRAMTotal)
		}
	}
	if s := got.Summary; s.JobsRunning != 2 || s.JobsQueued != 1 || s.PowerW != 900 || !s.Settling || s.Incarnation != 2 || len(got.Running) != 2 {
		t.Errorf("summary %+v, %d running listed: want the last settled figures, marked settling", s, len(got.Running))
	}
	// Settled again: the new figures.
	back := &events.Snapshot{Summary: events.Metrics{GPUs: 3, JobsRunning: 1, PowerW: 700, Incarnation: 2},
		GPUs: []events.SnapshotGPU{gpu("gpu-0", 10, false), gpu("gpu-1", 10, false), gpu("gpu-2", 10, false)}}
	got = w.keepKnown(back)
	if got.Summary.JobsRunning != 1 || got.GPUs[2].Stale || got.GPUs[2].Util != 10 {
		t.Errorf("after settling: %+v, %+v", got.Summary, got.GPUs[2])
	}
}
