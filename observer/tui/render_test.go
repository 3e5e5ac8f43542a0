package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/vram"
)

// fakeState builds a state of n GPUs, every third one running a job and
// gpu-1 with a hole between two jobs (fragmented VRAM).
func fakeState(n int) observer.State {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s := &events.Snapshot{SimTime: now, Policy: "binpack", Summary: events.Metrics{GPUs: n, JobsQueued: 1, JobsRunning: 2}}
	for i := range n {
		g := events.SnapshotGPU{Alive: i != 4}
		g.GPU, g.Node, g.Model, g.VRAMTotal = fmt.Sprintf("gpu-%d", i), "node-0", "A100-40GB", int64(40*model.GB)
		if i%3 == 0 {
			g.Util, g.VRAMUsed = 80, int64(30*model.GB)
			g.Allocs = []vram.Alloc{{Owner: "job-a", Offset: 0, Size: g.VRAMUsed}}
		}
		if i == 1 {
			g.Util, g.VRAMUsed = 40, int64(20*model.GB)
			g.Allocs = []vram.Alloc{{Owner: "job-b", Offset: 0, Size: int64(10 * model.GB)}, {Owner: "job-c", Offset: int64(25 * model.GB), Size: int64(10 * model.GB)}}
		}
		s.GPUs = append(s.GPUs, g)
	}
	s.Running = []events.JobInfo{{JobID: "job-a", Name: "GPT-fine-tune", Priority: model.PriorityHigh, GPUIDs: []string{"gpu-0"}, VRAM: int64(30 * model.GB), Util: 80, Duration: "4h"},
		{JobID: "job-b", Name: "bert-small", Priority: model.PriorityLow, GPUIDs: []string{"gpu-1"}}}
	s.Queue = []events.JobInfo{{JobID: "job-q", Name: "too-big-now", Priority: model.PriorityLow, SubmittedAt: now.Add(-time.Minute),
		Reason: "fragmented: gpu-1 has 20 GB free but its largest free block is 15 GB (need 18 GB)"}}
	return observer.State{Snapshot: s, Connected: true,
		Decisions: map[string]events.Decision{"job-a": {JobID: "job-a", Policy: "binpack", GPUs: []string{"gpu-0"},
			Candidates: []events.Candidate{{GPUs: []string{"gpu-0"}, Score: 87.5}, {GPUs: []string{"gpu-3"}, Score: 60}}}},
		Log: []observer.LogLine{{Text: "Dec 2 12:00  started   GPT-fine-tune on gpu-0"}}}
}

func checkFrame(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) > h {
		t.Errorf("%d lines, the terminal has %d", len(lines), h)
	}
	for i, l := range lines {
		if lipgloss.Width(l) > w {
			t.Errorf("line %d is %d cells wide, the terminal %d: %q", i, lipgloss.Width(l), w, l)
		}
	}
}

// TestRenderFitsTheTerminal draws the reference cluster and a 100-GPU one at
// 80×24 and larger: every frame fits, shows every GPU or pages them, and
// carries the queue's reasons and the placement's scores.
func TestRenderFitsTheTerminal(t *testing.T) {
	for _, tc := range []struct{ gpus, w, h int }{{8, 80, 24}, {8, 160, 50}, {100, 80, 24}, {100, 200, 60}, {8, 40, 12}} {
		t.Run(fmt.Sprintf("%dgpus-%dx%d", tc.gpus, tc.w, tc.h), func(t *testing.T) {
			st := fakeState(tc.gpus)
			for _, frag := range []bool{false, true} {
				for p := Pane(0); p < paneCount; p++ {
					frame := Render(st, View{Width: tc.w, Height: tc.h, Frag: frag, Pane: p})
					checkFrame(t, frame, tc.w, tc.h)
				}
			}
		})
	}
	small := Render(fakeState(8), View{Width: 80, Height: 24})
	for _, want := range []string{"gpu-0", "gpu-7", "GPT-fine-tune", "DOWN", "policy binpack"} {
		if !strings.Contains(small, want) {
			t.Errorf("80×24 frame of 8 GPUs lacks %q:\n%s", want, small)
		}
	}
	// A GPU not read yet (a restarted scheduler) shows as unknown, not DOWN.
	unread := fakeState(8)
	unread.Snapshot.GPUs[5] = events.SnapshotGPU{GPUStatus: events.GPUStatus{GPU: "gpu-5", Node: "node-0"}, Unknown: true}
	if frame := Render(unread, View{Width: 120, Height: 40}); !strings.Contains(frame, "gpu-5 unknown yet") {
		t.Errorf("a GPU not read yet should say so:\n%s", frame)
	}
	if strings.Contains(small, "queue priority") {
		t.Errorf("the default queue order should not take room in the header:\n%s", small)
	}
	las := fakeState(8)
	las.Snapshot.Summary.Queue = "las"
	if frame := Render(las, View{Width: 120, Height: 24}); !strings.Contains(frame, "policy binpack, queue las") {
		t.Errorf("a queue order other than the default should show in the header:\n%s", frame)
	}
	big := Render(fakeState(100), View{Width: 80, Height: 24})
	if !strings.Contains(big, "of 100") || !strings.Contains(big, "util map") {
		t.Errorf("100 GPUs at 80×24 should page with a heat map:\n%s", big)
	}
	last := Render(fakeState(100), View{Width: 80, Height: 24, Page: 99})
	if !strings.Contains(last, "gpu-99") {
		t.Errorf("the last page should show gpu-99:\n%s", last)
	}
	queue := Render(fakeState(8), View{Width: 120, Height: 24, Pane: PaneQueue})
	if !strings.Contains(queue, "fragmented: gpu-1") {
		t.Errorf("queue pane lacks the pending reason:\n%s", queue)
	}
	why := Render(fakeState(8), View{Width: 120, Height: 24, Pane: PaneWhy})
	if !strings.Contains(why, "gpu-0 87.5") || !strings.Contains(why, "gpu-3 60.0") {
		t.Errorf("why pane lacks the candidates and scores:\n%s", why)
	}
	tall := Render(fakeState(8), View{Width: 160, Height: 50, Frag: true})
	if !strings.Contains(tall, "·") || !strings.Contains(tall, "Events") || !strings.Contains(tall, "Queue (1)") {
		t.Errorf("a tall frame shows every pane and the fragmentation view shows holes:\n%s", tall)
	}
}

func TestParseJobLine(t *testing.T) {
	b, err := observer.ParseJobLine("name=bert vram=20GB util=60 gpus=2 duration=30m")
	if err != nil || string(b) != `{"name":"bert","gpus":2,"vram":"20GB","util":60,"duration":"30m"}` {
		t.Fatalf("got %s, %v", b, err)
	}
	for _, bad := range []string{"", "util=high", "novalue", "{bad", "name=a name=b", "colour=red", `{"name":"a","Name":"b"}`} {
		if _, err := observer.ParseJobLine(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// TestPanesCountWhatTheyHideAndSayWhenEmpty: "… N more" is the rows not
// shown, an empty queue says so and how to add a job, and the figures
// line wraps rather than being cut at 80 columns.
func TestPanesCountWhatTheyHideAndSayWhenEmpty(t *testing.T) {
	st := fakeState(8)
	for i := range 9 {
		st.Snapshot.Running = append(st.Snapshot.Running, events.JobInfo{JobID: fmt.Sprintf("r%d", i), Name: fmt.Sprintf("run-%d", i)})
	}
	lines := pane(st, PaneRunning, 100, 8) // 11 jobs + a header in 8 lines
	shown := 0
	for _, l := range lines {
		if strings.Contains(l, "run-") || strings.Contains(l, "GPT-fine-tune") || strings.Contains(l, "bert-small") {
			shown++
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, fmt.Sprintf("… %d more", 11-shown)) {
		t.Errorf("%d of 11 jobs shown, the last line says %q", shown, last)
	}
	st.Snapshot.Queue = nil
	if q := strings.Join(pane(st, PaneQueue, 100, 8), "\n"); !strings.Contains(q, "0 waiting") {
		t.Errorf("an empty queue pane says nothing:\n%s", q)
	}
	frame := Render(fakeState(8), View{Width: 80, Height: 24})
	if !strings.Contains(frame, "kWh") || !strings.Contains(frame, "preempt") {
		t.Errorf("the figures line was cut at 80 columns:\n%s", frame)
	}
}

// TestHelpScreenExplainsEachFigure: ? shows every topic's text, wrapped
// to the terminal, and the trade-off of the policy in force.
func TestHelpScreenExplainsEachFigure(t *testing.T) {
	frame := Render(fakeState(8), View{Width: 100, Height: 60, Help: true})
	checkFrame(t, frame, 100, 60)
	for _, topic := range helpTopics {
		text := observer.Explanations[topic.key]
		if text == "" {
			t.Errorf("topic %s has no text", topic.key)
			continue
		}
		first := strings.Fields(text)[0] + " " + strings.Fields(text)[1]
		if !strings.Contains(frame, first) {
			t.Errorf("the help screen lacks %s (%q):\n%s", topic.key, first, frame)
		}
	}
	if !strings.Contains(frame, "busiest") {
		t.Errorf("the help screen does not say what binpack costs:\n%s", frame)
	}
}

// TestPanesShowTrainingJobs: a training job shows its replicas, its
// application and its epoch, not "0 GB", nothing and 0 %.
func TestPanesShowTrainingJobs(t *testing.T) {
	st := fakeState(8)
	st.Snapshot.Running = append(st.Snapshot.Running, events.JobInfo{JobID: "job-t", Name: "cifar-2", GPUIDs: []string{"gpu-6", "gpu-7"},
		Training: &model.Training{App: "cifar10", Batch: 1024, Replicas: 2}, TrainingState: &model.TrainingState{Epoch: 12}})
	st.Snapshot.Queue = append(st.Snapshot.Queue, events.JobInfo{JobID: "job-u", Name: "bert-6", SubmittedAt: st.Snapshot.SimTime,
		Training: &model.Training{App: "bert", Batch: 384, Replicas: 6}})
	line := func(p Pane, name string) string {
		for _, l := range pane(st, p, 120, 20) {
			if strings.HasPrefix(l, name) {
				return l
			}
		}
		t.Fatalf("no line for %s in pane %d", name, p)
		return ""
	}
	if l := line(PaneRunning, "cifar-2"); !strings.Contains(l, "2×GPU") || !strings.Contains(l, "cifar10") || !strings.Contains(l, "ep12") {
		t.Errorf("running training job: %q; want its replicas, application and epoch", l)
	}
	if l := line(PaneQueue, "bert-6"); !strings.Contains(l, "6×GPU") {
		t.Errorf("queued training job: %q; want its replicas", l)
	}
}

// TestACardShowsItsPerformanceLevels (issue 44 item 4): a GPU with a
// variability profile shows its level per class on its card (lvl A0 B1);
// one without shows no such line.
func TestACardShowsItsPerformanceLevels(t *testing.T) {
	g := events.SnapshotGPU{GPUStatus: events.GPUStatus{GPU: "gpu-0", Model: "V100-16GB", VRAMTotal: 16 << 30,
		Variability: map[string]float64{"classB": 1.01, "classA": 0.93}}, Alive: true, PerfLevels: map[string]int{"classA": 0, "classB": 1}}
	if got := card(g, nil, false); !strings.Contains(got, "lvl A0 B1") {
		t.Errorf("card:\n%s\nwant a line lvl A0 B1", got)
	}
	g.Variability, g.PerfLevels = nil, nil
	if got := card(g, nil, false); strings.Contains(got, "lvl") {
		t.Errorf("a GPU without variability shows levels:\n%s", got)
	}
}

// TestAnUnknownGPUIsNotZero (issue 45 item 4): a GPU the restarted
// scheduler has not read shows "unknown yet", not "0/0GB · idle"; with
// last known figures it shows them, marked last known; the headline of
// a settling snapshot says its figures are the last known.
func TestAnUnknownGPUIsNotZero(t *testing.T) {
	g := events.SnapshotGPU{GPUStatus: events.GPUStatus{GPU: "gpu-3"}, Unknown: true}
	for _, got := range []string{card(g, nil, false), gpuLine(g, nil, false, 80)} {
		if !strings.Contains(got, "unknown yet") || strings.Contains(got, "0/0") || strings.Contains(got, "idle") {
			t.Errorf("unknown GPU drawn as:\n%s", got)
		}
	}
	g = events.SnapshotGPU{GPUStatus: events.GPUStatus{GPU: "gpu-3", Model: "A100-40GB", Util: 70, VRAMUsed: 20 << 30, VRAMTotal: 40 << 30},
		Unknown: true, Stale: true}
	for _, got := range []string{card(g, nil, false), gpuLine(g, nil, false, 100)} {
		if !strings.Contains(got, "last known") || !strings.Contains(strings.ReplaceAll(got, " ", ""), "20/40GB") {
			t.Errorf("stale GPU drawn as:\n%s", got)
		}
	}
	lines := headlineLines(&events.Snapshot{Summary: events.Metrics{Settling: true, GPUsUnknown: 2, JobsRunning: 5}}, 200)
	if !strings.Contains(strings.Join(lines, "\n"), "last known figures") {
		t.Errorf("settling headline: %v", lines)
	}
}
