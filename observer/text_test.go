package observer_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, gpus string) *nats.Conn {
	t.Helper()
	shape, err := model.ParseGPUs(gpus)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(context.Background(), cluster.Config{Access: cluster.Access{Listen: "127.0.0.1:-1"}, Hardware: cluster.Hardware{Shape: shape}, Timing: cluster.Timing{Speed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close(); c.Stop() })
	return nc
}

func submit(t *testing.T, nc *nats.Conn, body string) {
	t.Helper()
	if _, err := nc.Request("gpusched.job.submit", []byte(body), 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestTextViewShowsGPUsJobsAndQueue renders one frame of a live cluster:
// every GPU with util and VRAM, the running jobs, the queue with reasons.
func TestTextViewShowsGPUsJobsAndQueue(t *testing.T) {
	nc := start(t, model.DefaultGPUs)
	submit(t, nc, `{"name":"GPT-fine-tune","priority":"high","vram":"38GB","util":82,"duration":"4h","gpu":"gpu-0"}`)
	submit(t, nc, `{"name":"blocker","priority":"high","vram":"20GB","util":50,"duration":"4h","gpu":"gpu-6"}`)
	submit(t, nc, `{"name":"too-big-now","priority":"low","vram":"70GiB","util":50,"duration":"1h","gpu":"gpu-6","job_id":"too-big-now"}`)
	// A job not placed at once is answered "queued" and gets its reason at
	// the scheduler's next pass: the frame is drawn once it has (under
	// -race on a loaded CI machine the snapshot came first once).
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := nc.Request("gpusched.job.get", []byte(`{"job_id":"too-big-now"}`), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(m.Data, []byte(`"reason":"no GPU`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued job has no reason after 5 s: %s", m.Data)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out bytes.Buffer
	if err := observer.Text(context.Background(), nc, events.NewSubjects(""), &out, observer.TextOptions{Once: true}); err != nil {
		t.Fatal(err)
	}
	frame := out.String()
	for _, want := range []string{"policy binpack", "gpu-0", "gpu-7", "A100-80GB", "82%", "38/40", "GPT-fine-tune",
		"RUNNING JOBS", "QUEUE (1)", "too-big-now", "no GPU with 70GB free VRAM"} {
		if !strings.Contains(frame, want) {
			t.Errorf("frame lacks %q:\n%s", want, frame)
		}
	}
}

// TestTextViewCondensesLargeClusters: a 100-GPU cluster shows the first
// GPUs and says how many more there are.
func TestTextViewCondensesLargeClusters(t *testing.T) {
	nc := start(t, "100xA100-80GB")
	var out bytes.Buffer
	observer.Text(context.Background(), nc, events.NewSubjects(""), &out, observer.TextOptions{Once: true, MaxGPUs: 10})
	if frame := out.String(); !strings.Contains(frame, "100 GPUs") || !strings.Contains(frame, "… 90 more GPUs") || strings.Contains(frame, "gpu-10 ") {
		t.Fatalf("condensed frame wrong:\n%s", frame)
	}
}

func TestSummarize(t *testing.T) {
	line := observer.Summarize([]byte(`{"type":"gpusched.job.preempted","simtime":"2026-01-01T10:00:00Z","subject":"j1",
		"data":{"name":"XGB","reason":"preempted by GPT (j2)","progress_s":1200}}`))
	if !strings.Contains(line, "preempted") || !strings.Contains(line, "XGB") || !strings.Contains(line, "20m") {
		t.Fatalf("summary %q", line)
	}
	line = observer.Summarize([]byte(`{"type":"gpusched.security.node-cut-off","simtime":"2026-01-01T10:00:00Z","subject":"box2",
		"data":{"node":"box2","budget":"256KB/s,16MB,cool-off=1m0s","until":"2026-12-04T10:00:00Z","cuts":2}}`))
	if !strings.Contains(line, "cut off   node box2: past its event budget 256KB/s,16MB") || !strings.Contains(line, "(cut 2)") {
		t.Fatalf("cut-off summary %q", line)
	}
	if line := observer.Summarize([]byte(`{"type":"gpusched.security.node-readmitted","data":{"node":"box2"}}`)); !strings.Contains(line, "readmitted node box2") {
		t.Fatalf("readmission summary %q", line)
	}
	if observer.Summarize([]byte(`{"type":"gpusched.gpu.status"}`)) != "" {
		t.Fatal("status events are too frequent to list")
	}
	for data, want := range map[string]string{
		`{"policy":"spread","previous":"binpack","queue":"priority"}`:                         "policy    binpack → spread",
		`{"policy":"binpack","previous":"","queue":"las","previous_queue":"priority"}`:        "queue     priority → las",
		`{"policy":"spread","previous":"binpack","queue":"srtf","previous_queue":"priority"}`: "policy    binpack → spread, queue priority → srtf",
		// A change of filters or oversubscription alone says so, not
		// "policy  → binpack".
		`{"policy":"binpack","previous":"","filters":"capacity","previous_filters":"none"}`:   "filters   none → capacity",
		`{"policy":"binpack","previous":"","oversubscribe":"inf","previous_oversubscribe":1}`: "oversubscribe ×1 → ×inf",
	} {
		line := observer.Summarize([]byte(`{"type":"gpusched.sched.policy","simtime":"2026-01-01T10:00:00Z","data":` + data + `}`))
		if !strings.HasSuffix(line, want) {
			t.Errorf("%s: %q, want it to end %q", data, line, want)
		}
	}
}

// TestTextViewShowsTrainingJobs: a training job has no VRAM, duration or
// work in seconds of its own; the text view shows its replicas, its
// application and its epoch instead of "0 GB", nothing and 0 %.
func TestTextViewShowsTrainingJobs(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	running := events.JobInfo{JobID: "a", Name: "cifar-8", State: events.JobRunning, Util: 100,
		GPUIDs: []string{"gpu-0", "gpu-1"}, Training: &model.Training{App: "cifar10", Batch: 1024, Replicas: 2},
		TrainingState: &model.TrainingState{Epoch: 3}}
	queued := events.JobInfo{JobID: "b", Name: "bert-6", State: events.JobQueued, Util: 100, SubmittedAt: now,
		Training: &model.Training{App: "bert", Batch: 384, Replicas: 6}, Reason: "waits for the tiresias round to allocate it GPUs"}
	var out bytes.Buffer
	observer.Render(&out, &events.Snapshot{SimTime: now, Summary: events.Metrics{JobsQueued: 1, JobsRunning: 1},
		Running: []events.JobInfo{running}, Queue: []events.JobInfo{queued}}, nil, 10)
	lines := strings.Split(out.String(), "\n")
	find := func(name string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, name) {
				return l
			}
		}
		t.Fatalf("no line for %s in:\n%s", name, out.String())
		return ""
	}
	if l := find("cifar-8"); !strings.Contains(l, "2×GPU") || !strings.Contains(l, "cifar10") || !strings.Contains(l, "epoch 3") || !strings.Contains(l, "gpu-0,gpu-1") {
		t.Errorf("running training job: %q; want its replicas, application, epoch and GPUs", l)
	}
	if l := find("bert-6"); !strings.Contains(l, "6×GPU") || !strings.Contains(l, "waits for the tiresias round") {
		t.Errorf("queued training job: %q; want its replicas and reason", l)
	}
}
