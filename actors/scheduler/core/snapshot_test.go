package core

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// wideHarness is a harness with gpus A100s up, eight to a node, each
// node heartbeating once.
func wideHarness(tb testing.TB, gpus int) *Harness {
	tb.Helper()
	h, err := NewHarness(Config{Policies: Policies{Policy: "binpack"}}, false)
	if err != nil {
		tb.Fatal(err)
	}
	m, err := model.LookupModel("A100-40GB")
	if err != nil {
		tb.Fatal(err)
	}
	for n := range gpus / 8 {
		node := fmt.Sprintf("node-%d", n)
		hb := events.NodeHeartbeat{Node: node, Incarnation: 1, CPUTotal: 64, MemoryTotal: 512 << 30}
		for i := range 8 {
			id := fmt.Sprintf("%s-gpu-%d", node, i)
			st := events.GPUStatus{GPU: id, Node: node, Model: m.Name, Incarnation: 1, VRAMModel: string(vram.Contiguous),
				VRAMTotal: int64(m.VRAM), Change: events.ChangeUp}
			h.GPUs[id] = &FakeGPU{Status: st, Progress: map[string]float64{}}
			h.GPUEvent(st, events.GPUUp)
			hb.GPUs = append(hb.GPUs, events.HeartbeatGPU{GPU: id, Incarnation: 1, Alive: true})
		}
		h.Step(Input{Msg: &Msg{Subject: h.Subjects.NodeHeartbeat(node), Data: encode(map[string]any{"data": hb})}})
	}
	return h
}

// TestAFloodOfSnapshotsWalksABigClusterOncePerWindow (issue 42 item 5):
// on a cluster of more than snapshotExactGPUs GPUs, 100 snapshot requests
// within one window cost one walk of the cluster, not 100 (each walk is
// 75 ms at 100,000 GPUs, so 100 of them held heartbeats back past a
// lease); the entries on a page are still read afresh, and a small
// cluster is walked for every request.
func TestAFloodOfSnapshotsWalksABigClusterOncePerWindow(t *testing.T) {
	const gpus = 4096
	h := wideHarness(t, gpus)
	before := h.Core.answer.layout.walks
	var snap events.Snapshot
	for i := range 100 {
		snap = events.Snapshot{}
		if err := json.Unmarshal(h.Request("cluster.snapshot", "", map[string]any{"page": i % 16}), &snap); err != nil {
			t.Fatal(err)
		}
	}
	if walks := h.Core.answer.layout.walks - before; walks != 1 {
		t.Fatalf("100 snapshot requests walked the cluster %d times, want 1", walks)
	}
	if snap.Summary.GPUs != gpus || snap.Pages != gpus/snapshotGPUsPerPage || len(snap.GPUs) != snapshotGPUsPerPage {
		t.Fatalf("page %d of %d: %d GPUs, summary of %d GPUs; want %d pages of %d of %d",
			snap.Page, snap.Pages, len(snap.GPUs), snap.Summary.GPUs, gpus/snapshotGPUsPerPage, snapshotGPUsPerPage, gpus)
	}

	// A job placed within the window shows on its GPU's entry at once.
	r := h.Submit(spec("fresh", "10GB"))
	h.Pass()
	if j := h.JobState(r.JobID); j.State != "running" || len(j.GPUIDs) != 1 || j.GPUIDs[0] != "node-0-gpu-0" {
		t.Fatalf("the job %q is %s on %v, want running on node-0-gpu-0", r.JobID, j.State, j.GPUIDs)
	}
	snap = events.Snapshot{}
	json.Unmarshal(h.Request("cluster.snapshot", "", map[string]any{"page": 0}), &snap)
	if g := snap.GPUs[0]; g.GPU != "node-0-gpu-0" || g.VRAMUsed == 0 {
		t.Fatalf("page 0 starts with %s using %d bytes of VRAM, want node-0-gpu-0 holding the new job", g.GPU, g.VRAMUsed)
	}
	if walks := h.Core.answer.layout.walks - before; walks != 1 {
		t.Fatalf("walked %d times within the window, want 1", walks)
	}

	// GPUs that join within the window are counted in the summary once
	// the counts' shorter window (100 ns a GPU) has passed, with no walk.
	m, _ := model.LookupModel("A100-40GB")
	hb := events.NodeHeartbeat{Node: "node-512", Incarnation: 1, CPUTotal: 64, MemoryTotal: 512 << 30}
	for i := range 8 {
		st := events.GPUStatus{GPU: fmt.Sprintf("node-512-gpu-%d", i), Node: "node-512", Model: m.Name, Incarnation: 1,
			VRAMModel: string(vram.Contiguous), VRAMTotal: int64(m.VRAM), Change: events.ChangeUp}
		h.GPUs[st.GPU] = &FakeGPU{Status: st, Progress: map[string]float64{}}
		h.GPUEvent(st, events.GPUUp)
		hb.GPUs = append(hb.GPUs, events.HeartbeatGPU{GPU: st.GPU, Incarnation: 1, Alive: true})
	}
	h.Step(Input{Msg: &Msg{Subject: h.Subjects.NodeHeartbeat("node-512"), Data: encode(map[string]any{"data": hb})}})
	h.Advance((gpus + 8) * snapshotCountReusePerGPU)
	snap = events.Snapshot{}
	json.Unmarshal(h.Request("cluster.snapshot", "", map[string]any{"summary_only": true}), &snap)
	if snap.Summary.GPUs != gpus+8 || snap.Summary.GPUsAlive != gpus+8 {
		t.Fatalf("8 GPUs joined within the window: the summary counts %d GPUs, %d alive; want %d", snap.Summary.GPUs, snap.Summary.GPUsAlive, gpus+8)
	}
	if walks := h.Core.answer.layout.walks - before; walks != 1 {
		t.Fatalf("counting the GPUs that joined walked the cluster: %d walks, want 1", walks)
	}

	// Once the window (10 µs a GPU) has passed, the next request walks again.
	h.Advance(gpus * snapshotReusePerGPU)
	h.Request("cluster.snapshot", "", map[string]any{"summary_only": true})
	if walks := h.Core.answer.layout.walks - before; walks != 2 {
		t.Fatalf("after the window: %d walks, want 2", walks)
	}

	small := wideHarness(t, 16)
	before = small.Core.answer.layout.walks
	for range 10 {
		small.Request("cluster.snapshot", "", map[string]any{})
	}
	if walks := small.Core.answer.layout.walks - before; walks != 10 {
		t.Fatalf("a 16-GPU cluster was walked %d times for 10 snapshots, want every time", walks)
	}
}

// BenchmarkSnapshotPage is one snapshot page of a cluster of 1,000 to
// 100,000 GPUs: a walk of the cluster once a window, then the page.
func BenchmarkSnapshotPage(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := wideHarness(b, n)
			b.ResetTimer()
			for range b.N {
				h.Request("cluster.snapshot", "", map[string]any{"page": 3})
			}
		})
	}
}

// BenchmarkGPUStatus is one GPU's status event (what every placement, end
// and progress report brings) in a cluster of 1,000 GPUs with 0 to 2,000
// jobs running: the reconcile looks at the GPU's own jobs, so its cost
// does not grow with the jobs running elsewhere.
func BenchmarkGPUStatus(b *testing.B) {
	for _, running := range []int{0, 500, 2000} {
		b.Run(fmt.Sprint(running), func(b *testing.B) {
			h := wideHarness(b, 1000)
			for i := range running {
				if r := h.Submit(spec(fmt.Sprint("j", i), "4GB")); r.JobID == "" {
					b.Fatalf("submit %d: %+v", i, r)
				}
				h.Pass()
			}
			if got := h.Core.running.len(); got != running {
				b.Fatalf("%d jobs running, want %d", got, running)
			}
			st := h.GPUs["node-0-gpu-0"].Status
			subject := h.Subjects.GPUEvent(st.Node, st.GPU, events.GPUStatusType)
			body := encode(map[string]any{"source": "/gpu/" + st.Node + "/" + st.GPU, "simtime": h.Now, "data": st})
			b.ResetTimer()
			for range b.N {
				h.Step(Input{Msg: &Msg{Subject: subject, Data: body}})
			}
		})
	}
}
