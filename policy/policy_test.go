package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/vram"
)

// job is a running job in a test cluster: GPU index, VRAM and util.
type job struct {
	id       string
	gpu      int
	vram     model.Bytes
	util     float64
	priority model.Priority
	lost     float64
	offset   int64 // -1: after the previous allocation
}

// demoCluster builds the reference cluster (6×A100 40GB on node-0, 2×A100
// 80GB on node-1) with jobs laid out contiguously in the order given.
func demoCluster(jobs ...job) *Cluster {
	c := &Cluster{VRAMModel: vram.Contiguous}
	c.Nodes = []*Node{
		{ID: "node-0", Index: 0, CPUMilli: 96000, MemTotal: int64(768 * model.GiB), Alive: true},
		{ID: "node-1", Index: 1, CPUMilli: 32000, MemTotal: int64(256 * model.GiB), Alive: true},
	}
	for i := 0; i < 8; i++ {
		node, capacity := 0, 40*model.GiB
		if i >= 6 {
			node, capacity = 1, 80*model.GiB
		}
		model := "A100-40GB"
		if node == 1 {
			model = "A100-80GB"
		}
		c.GPUs = append(c.GPUs, &GPU{ID: "gpu-" + string(rune('0'+i)), Node: c.Nodes[node].ID, Model: model,
			Index: i, NodeIndex: node, VRAMTotal: int64(capacity), Alive: true})
		c.Nodes[node].GPUs = append(c.Nodes[node].GPUs, i)
	}
	for _, j := range jobs {
		g := c.GPUs[j.gpu]
		off := g.VRAMUsed()
		if j.offset > 0 {
			off = j.offset
		}
		g.Allocs = append(g.Allocs, vram.Alloc{Owner: j.id, Offset: off, Size: int64(j.vram)})
		p := j.priority
		if p == 0 {
			p = model.PriorityLow
		}
		g.Shares = append(g.Shares, Share{JobID: j.id, Priority: p, Preemptible: true, VRAM: int64(j.vram), Util: j.util, LostWork: j.lost})
		g.Util += j.util
	}
	return c
}

// demoState is DESIGN §4's example state.
func demoState() *Cluster {
	return demoCluster(
		job{id: "GPT-fine-tune", gpu: 0, vram: 38 * model.GB, util: 82},
		job{id: "BERT-train", gpu: 1, vram: 28 * model.GB, util: 65},
		job{id: "ResNet-eval", gpu: 2, vram: 20 * model.GB, util: 45},
		job{id: "XGB-sweep", gpu: 3, vram: 8 * model.GB, util: 20},
		job{id: "Stable-Diff", gpu: 6, vram: 34 * model.GB, util: 78},
	)
}

// withV100s adds a node of two V100 16GB (gpu-8, gpu-9; gpu-8 runs a
// 12GB job, so gpu-9 is the one an 8GB job still fits next to nothing).
func withV100s(c *Cluster) *Cluster {
	n := &Node{ID: "node-2", Index: 2, CPUMilli: 64000, MemTotal: int64(256 * model.GB), Alive: true}
	c.Nodes = append(c.Nodes, n)
	for i := 8; i < 10; i++ {
		g := &GPU{ID: fmt.Sprintf("gpu-%d", i), Node: n.ID, Model: "V100-16GB", Index: i, NodeIndex: 2, VRAMTotal: int64(16 * model.GB), Alive: true}
		c.GPUs = append(c.GPUs, g)
		n.GPUs = append(n.GPUs, i)
	}
	g := c.GPUs[8]
	g.Allocs = append(g.Allocs, vram.Alloc{Owner: "v", Size: int64(12 * model.GB)})
	g.Shares = append(g.Shares, Share{JobID: "v", Priority: model.PriorityLow, Preemptible: true, VRAM: int64(12 * model.GB), Util: 30})
	g.Util = 30
	return c
}

func mustPolicy(t *testing.T, name string) Policy {
	t.Helper()
	p, err := Lookup[Policy](name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlacementTable(t *testing.T) {
	cases := []struct {
		name    string
		cluster *Cluster
		policy  string
		req     Request
		want    string // GPU id, or "" for no placement
	}{
		{"design example binpack: gpu-0 has no room, gpu-6 is busiest", demoState(), "binpack", Request{GPUs: 1, VRAM: int64(10 * model.GB)}, "gpu-6"},
		{"design example spread: idle gpu-4 with lowest id", demoState(), "spread", Request{GPUs: 1, VRAM: int64(10 * model.GB)}, "gpu-4"},
		{"design example first-fit: gpu-1 is the lowest id with room", demoState(), "first-fit", Request{GPUs: 1, VRAM: int64(10 * model.GB)}, "gpu-1"},
		{"38GB fits an A100 40GB (40GiB)", demoCluster(), "first-fit", Request{GPUs: 1, VRAM: int64(38 * model.GB)}, "gpu-0"},
		{"binpack ties on util go to more VRAM used", demoCluster(
			job{id: "a", gpu: 2, vram: 4 * model.GB, util: 30}, job{id: "b", gpu: 5, vram: 8 * model.GB, util: 30}),
			"binpack", Request{GPUs: 1, VRAM: int64(4 * model.GB)}, "gpu-5"},
		{"spread ties on util go to less VRAM used", demoCluster(
			job{id: "a", gpu: 0, vram: 4 * model.GB, util: 0}, job{id: "b", gpu: 1, vram: 0 + 1, util: 0},
			job{id: "c", gpu: 2, vram: 8 * model.GB}, job{id: "d", gpu: 3, vram: 8 * model.GB},
			job{id: "e", gpu: 4, vram: 8 * model.GB}, job{id: "f", gpu: 5, vram: 8 * model.GB},
			job{id: "g", gpu: 6, vram: 8 * model.GB}, job{id: "h", gpu: 7, vram: 8 * model.GB}),
			"spread", Request{GPUs: 1, VRAM: int64(4 * model.GB)}, "gpu-1"},
		{"model constraint", demoCluster(), "first-fit", Request{GPUs: 1, VRAM: int64(10 * model.GB), Models: []string{"A100-80GB"}}, "gpu-6"},
		{"too big for every GPU", demoCluster(), "binpack", Request{GPUs: 1, VRAM: int64(90 * model.GiB)}, ""},
		{"held GPU is skipped", demoCluster(), "first-fit", Request{GPUs: 1, VRAM: int64(10 * model.GB), Held: map[int]bool{0: true}}, "gpu-1"},
		{"pinned GPU", demoState(), "binpack", Request{GPUs: 1, VRAM: int64(10 * model.GB), PinGPU: "gpu-7"}, "gpu-7"},
		{"node short of CPU", demoCluster(), "first-fit", Request{GPUs: 1, VRAM: int64(10 * model.GB), CPUMilli: 64000}, "gpu-0"},
		{"smallest-fit: an 8GB eval goes to the V100 16GB", withV100s(demoState()), "smallest-fit", Request{GPUs: 1, VRAM: int64(8 * model.GB)}, "gpu-9"},
		{"smallest-fit: a 20GB job goes to the busiest A100 40GB with room", withV100s(demoState()), "smallest-fit", Request{GPUs: 1, VRAM: int64(20 * model.GB)}, "gpu-2"},
		{"smallest-fit: a 38GB job to an idle A100 40GB", withV100s(demoState()), "smallest-fit", Request{GPUs: 1, VRAM: int64(38 * model.GB)}, "gpu-4"},
		{"node short of CPU goes to the other node", demoCluster(), "first-fit", Request{GPUs: 1, VRAM: int64(10 * model.GB), CPUMilli: 40000, PinNode: "node-1"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Place(tc.cluster, &tc.req, mustPolicy(t, tc.policy))
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("placed on %v, want nowhere", got[0].GPUs)
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("no placement (%s), want %s", Why(tc.cluster, &tc.req), tc.want)
			}
			if got[0].GPUs[0] != tc.want {
				t.Fatalf("placed on %s, want %s (candidates %v)", got[0].GPUs[0], tc.want, got)
			}
		})
	}
}

func TestGangPlacementStaysOnOneNode(t *testing.T) {
	c := demoState()
	got := Place(c, &Request{GPUs: 2, VRAM: int64(30 * model.GB)}, mustPolicy(t, "spread"))
	if len(got) == 0 {
		t.Fatal("no placement for a 2-GPU gang")
	}
	if got[0].Node != "node-0" || strings.Join(got[0].GPUs, ",") != "gpu-4,gpu-5" {
		t.Fatalf("gang placed on %s %v, want node-0 gpu-4,gpu-5", got[0].Node, got[0].GPUs)
	}
	if got := Place(c, &Request{GPUs: 3, VRAM: int64(60 * model.GB)}, mustPolicy(t, "binpack")); len(got) != 0 {
		t.Fatalf("3×60GB cannot fit (node-1 has 2 GPUs of 80GB): got %v", got)
	}
}

func TestWhyNamesFragmentation(t *testing.T) {
	// gpu-7 (80GiB) holds 20GiB at 0 and 20GiB at 40GiB: 40GiB free in two 20GiB holes.
	c := demoCluster(
		job{id: "a", gpu: 7, vram: 20 * model.GiB}, job{id: "b", gpu: 7, vram: 20 * model.GiB, offset: int64(40 * model.GiB)},
	)
	for i := 0; i < 7; i++ {
		c.GPUs[i].Alive = false
	}
	r := &Request{GPUs: 1, VRAM: int64(30 * model.GiB)}
	if got := Place(c, r, mustPolicy(t, "binpack")); len(got) != 0 {
		t.Fatalf("placed into fragmented VRAM: %v", got)
	}
	if why := Why(c, r); !strings.HasPrefix(why, "fragmented") {
		t.Fatalf("reason %q does not say fragmented", why)
	}
	c.VRAMModel = vram.Pooled
	if got := Place(c, r, mustPolicy(t, "binpack")); len(got) == 0 {
		t.Fatal("pooled VRAM must take 30GiB of 40GiB free")
	}
}

func TestChooseVictims(t *testing.T) {
	high := model.PriorityHigh
	cases := []struct {
		name    string
		cluster *Cluster
		req     Request
		want    string // comma-separated victims, "" none
		gpu     string
	}{
		{"fewest victims: one big job rather than two small", demoCluster(
			job{id: "big", gpu: 0, vram: 36 * model.GiB, lost: 500},
			job{id: "s1", gpu: 1, vram: 18 * model.GiB, lost: 1}, job{id: "s2", gpu: 1, vram: 18 * model.GiB, lost: 1},
			job{id: "x2", gpu: 2, vram: 39 * model.GiB, priority: high}, job{id: "x3", gpu: 3, vram: 39 * model.GiB, priority: high},
			job{id: "x4", gpu: 4, vram: 39 * model.GiB, priority: high}, job{id: "x5", gpu: 5, vram: 39 * model.GiB, priority: high},
			job{id: "x6", gpu: 6, vram: 79 * model.GiB, priority: high}, job{id: "x7", gpu: 7, vram: 79 * model.GiB, priority: high}),
			Request{GPUs: 1, VRAM: int64(30 * model.GiB), Priority: high}, "big", "gpu-0"},
		{"least lost work among equal counts", demoCluster(
			job{id: "a", gpu: 0, vram: 36 * model.GiB, lost: 900}, job{id: "b", gpu: 1, vram: 36 * model.GiB, lost: 100},
			job{id: "x2", gpu: 2, vram: 39 * model.GiB, priority: high}, job{id: "x3", gpu: 3, vram: 39 * model.GiB, priority: high},
			job{id: "x4", gpu: 4, vram: 39 * model.GiB, priority: high}, job{id: "x5", gpu: 5, vram: 39 * model.GiB, priority: high},
			job{id: "x6", gpu: 6, vram: 79 * model.GiB, priority: high}, job{id: "x7", gpu: 7, vram: 79 * model.GiB, priority: high}),
			Request{GPUs: 1, VRAM: int64(30 * model.GiB), Priority: high}, "b", "gpu-1"},
		{"equal priority is never a victim", demoCluster(
			job{id: "a", gpu: 0, vram: 39 * model.GiB, priority: model.PriorityMedium}),
			Request{GPUs: 1, VRAM: int64(30 * model.GiB), Priority: model.PriorityMedium, PinGPU: "gpu-0"}, "", ""},
		{"contiguity counts: freeing the job beside the hole", demoCluster(
			job{id: "a", gpu: 0, vram: 10 * model.GiB, lost: 1}, job{id: "b", gpu: 0, vram: 10 * model.GiB, lost: 50},
			job{id: "c", gpu: 0, vram: 10 * model.GiB, lost: 1}),
			// free: 10GiB at the end; freeing c gives a 20GiB hole, freeing a gives two 10GiB holes.
			Request{GPUs: 1, VRAM: int64(20 * model.GiB), Priority: high, PinGPU: "gpu-0"}, "c", "gpu-0"},
	}
	fewest, _ := Lookup[Preempt](DefaultPreempt)
	none, _ := Lookup[Preempt]("none")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := none.Victims(tc.cluster, &tc.req); ok {
				t.Fatal("the rule none chose victims")
			}
			got, ok := fewest.Victims(tc.cluster, &tc.req)
			if tc.want == "" {
				if ok {
					t.Fatalf("victims %v, want none", got.Victims)
				}
				return
			}
			if !ok {
				t.Fatalf("no victims, want %s", tc.want)
			}
			if v := strings.Join(got.Victims, ","); v != tc.want || got.GPUs[0] != tc.gpu {
				t.Fatalf("victims %s on %s, want %s on %s", v, got.GPUs[0], tc.want, tc.gpu)
			}
		})
	}
}

// TestQueueOrders sorts one set of waiting jobs under every queue order
// and checks the order each gives (ties always on acceptance order).
func TestQueueOrders(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	jobs := map[string]Queued{
		// a high-priority latecomer with a long job
		"hi": {Priority: 3, Submitted: at(60), Seq: 5, GPUs: 1, WorkS: 8 * 3600},
		// the first job, medium, half done after 20 GPU-hours on 4 GPUs (demoted at minute 300)
		"first": {Priority: 2, Submitted: at(0), Seq: 1, GPUs: 4, WorkS: 10 * 3600, ProgressS: 5 * 3600, AttainedGPUS: 20 * 3600, DemotedAt: at(300)},
		// medium, short, never ran
		"short": {Priority: 2, Submitted: at(10), Seq: 2, GPUs: 1, WorkS: 600},
		// low, demoted before "first" was
		"old-low": {Priority: 1, Submitted: at(5), Seq: 3, GPUs: 8, WorkS: 4 * 3600, ProgressS: 3 * 3600, AttainedGPUS: 24 * 3600, DemotedAt: at(200)},
		// medium, submitted with "short", accepted after it
		"twin": {Priority: 2, Submitted: at(10), Seq: 4, GPUs: 1, WorkS: 600},
	}
	for _, tc := range []struct{ queue, want string }{
		{"priority", "hi,first,short,twin,old-low"},
		{"fifo", "first,old-low,short,twin,hi"},
		{"las", "short,twin,hi,old-low,first"},
		{"srtf", "short,twin,old-low,first,hi"},
		{"sjf", "short,twin,old-low,hi,first"},
	} {
		q, err := Lookup[QueueSort](tc.queue)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for n := range jobs {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, b string) int {
			ja, jb := jobs[a], jobs[b]
			return Compare(q, &ja, &jb)
		})
		if got := strings.Join(names, ","); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.queue, got, tc.want)
		}
	}
	if _, err := Lookup[QueueSort]("lottery"); err == nil || !strings.Contains(err.Error(), "known: "+strings.Join(Names[QueueSort](), ", ")) {
		t.Errorf("an unknown queue order: %v", err)
	}
}

func TestHoldPicksTheMostFreeGPU(t *testing.T) {
	c := demoState()
	r := &Request{GPUs: 1, VRAM: int64(70 * model.GiB)}
	held := Hold(c, r, map[int]bool{})
	if len(held) != 1 || c.GPUs[held[0]].ID != "gpu-7" {
		t.Fatalf("held %v, want gpu-7 (idle 80GB)", held)
	}
	held = Hold(c, r, map[int]bool{7: true})
	if len(held) != 1 || c.GPUs[held[0]].ID != "gpu-6" {
		t.Fatalf("held %v, want gpu-6 once gpu-7 is held", held)
	}
}

// TestSkipFitRound: on a scratch copy with the preemptible running jobs
// lifted, jobs in queue order are placed (waiting) or put back where they
// run; a running job whose room a job ahead of it took is stopped, a job
// that fits nowhere does not block the ones behind it, a job that cannot
// be stopped keeps its place, and the cluster itself is left unchanged.
func TestSkipFitRound(t *testing.T) {
	r, err := Lookup[Round](DefaultRound)
	if err != nil {
		t.Fatal(err)
	}
	binpack, _ := Lookup[Policy]("binpack")
	// One node of two 80 GB GPUs; 70 GiB jobs take a GPU each.
	c := &Cluster{VRAMModel: vram.Contiguous}
	n := &Node{ID: "n", CPUMilli: 64000, MemTotal: 1 << 40, Alive: true, GPUs: []int{0, 1}}
	c.Nodes = []*Node{n}
	for i := range 2 {
		c.GPUs = append(c.GPUs, &GPU{ID: fmt.Sprintf("gpu-%d", i), Node: "n", Index: i, VRAMTotal: int64(80 * model.GiB), Alive: true})
	}
	req := func(id string, gpus int) *Request {
		return &Request{JobID: id, GPUs: gpus, VRAM: int64(70 * model.GiB), Util: 50, CPUMilli: 1000, Memory: 1 << 30}
	}
	running := func(id string, gpu int, preemptible bool) RoundJob {
		j := RoundJob{Request: req(id, 1), Running: true, Preemptible: preemptible, Node: "n", GPUs: []int{gpu}}
		c.land(j.Request, j.GPUs, "n")
		return j
	}
	old, tail := running("old", 0, true), running("tail", 1, true)
	jobs := []RoundJob{
		{Request: req("head", 1)}, // waiting, first in order: placed on gpu-0 (binpack, lowest id)
		{Request: req("gang", 2)}, // waiting, both GPUs: only gpu-1 is left, waits
		old,                       // its gpu-0 is head's now: stopped
		tail,                      // gpu-1 still its own: kept
	}
	before := fmt.Sprint(c.GPUs[0].Allocs, c.GPUs[1].Allocs, n.CPUUsedMilli)
	if got := strings.Join(r.Stop(c, jobs, binpack), ","); got != "old" {
		t.Fatalf("stopped %q, want old", got)
	}
	if after := fmt.Sprint(c.GPUs[0].Allocs, c.GPUs[1].Allocs, n.CPUUsedMilli); after != before {
		t.Fatalf("the round changed the cluster: %s, was %s", after, before)
	}
	// Old not preemptible: it keeps gpu-0, head takes gpu-1 and tail stops.
	jobs[2].Preemptible = false
	if got := strings.Join(r.Stop(c, jobs, binpack), ","); got != "tail" {
		t.Fatalf("stopped %q with old not preemptible, want tail", got)
	}
	// Nothing waiting ahead: nothing stops.
	if got := r.Stop(c, []RoundJob{old, tail, {Request: req("late", 1)}}, binpack); len(got) != 0 {
		t.Fatalf("stopped %v for a job behind them", got)
	}
	if _, err := Lookup[Round]("optimus"); err == nil || !strings.Contains(err.Error(), DefaultRound) {
		t.Errorf("an unknown round: %v", err)
	}
}
