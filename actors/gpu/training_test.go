package gpu_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/actors/node"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/internal/tracedir"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/pollux"
)

// startTrainingNode starts a one-GPU node whose GPU runs training jobs on
// m (none when nil), at speed simulated seconds per wall second.
func startTrainingNode(t *testing.T, m *pollux.Model, speed float64) (*nats.Conn, *statusLog) {
	t.Helper()
	return startNodeHost(t, speed, "A100-40GB", func(c *node.HostConfig) { c.Training = m })
}

// cifarJob is the model and a one-replica cifar10 job placed as its
// scheduler hands it to its GPU (placedJob), and the same job stepped
// offline to its completion.
func cifarJob(t *testing.T) (*pollux.Model, *pollux.Job, pollux.Job) {
	t.Helper()
	m, err := pollux.Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	j := placedJob(t, m, pollux.Spec{Name: "cifar", App: "cifar10", Replicas: 1, Batch: 128})
	want := *j
	want.Placement = []int{1}
	for !want.Done {
		if err := want.Advance(60); err != nil {
			t.Fatal(err)
		}
	}
	return m, j, want
}

// placedJob is spec's job as the scheduler hands it to its GPUs: waited
// two intervals (it was submitted at 0), then placed on one node.
func placedJob(t *testing.T, m *pollux.Model, s pollux.Spec) *pollux.Job {
	t.Helper()
	j, err := m.NewJob(s)
	if err != nil {
		t.Fatal(err)
	}
	j.Advance(120)
	j.Reallocate([]int{s.Replicas})
	return j
}

func trainingPart(j *pollux.Job) *events.Assignment {
	return &events.Assignment{Name: j.Name, VRAM: int64(40 * model.GB), Milli: 1000, Util: 100,
		Training: &events.TrainingPart{Job: model.Training{App: j.App, Batch: j.Batch, Replicas: j.Replicas},
			SubmitS: j.Submit, State: j.State(), IntervalS: 60}}
}

// TestAGPURunsATrainingJobAsTheModelSteps: a cifar10 job placed on the GPU
// completes there at the second stepping its model interval by interval
// gives, and its completion carries the same state (service, epoch,
// progress); a describe meanwhile shows it stepped to a whole interval.
func TestAGPURunsATrainingJobAsTheModelSteps(t *testing.T) {
	m, j, want := cifarJob(t)
	t.Logf("the job completes at %d s", want.Completion)
	// 20,000×: the job's hour takes a fifth of a second.
	nc, log := startTrainingNode(t, m, 20000)
	if r := ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "j1", TTLMillis: 60000, Job: trainingPart(j)}); !r.OK {
		t.Fatalf("reserve: %+v", r)
	}
	if r := ctl(t, nc, events.Control{Op: events.OpCommit, JobID: "j1"}); !r.OK {
		t.Fatalf("commit: %+v", r)
	}
	var mid *model.TrainingState
	testbus.WaitFor(t, "the job to run a few intervals", 5*time.Second, func() bool {
		st := ctl(t, nc, events.Control{Op: events.OpDescribe}).Status
		for _, g := range st.Jobs {
			if g.Training != nil && g.Training.ClockS >= j.Clock+180 {
				mid = g.Training
			}
		}
		return mid != nil || log.last(events.ChangeCompleted, "j1") != nil
	})
	if mid != nil {
		if (mid.ClockS-j.Clock)%60 != 0 {
			t.Errorf("described at the run's second %d: not a whole interval from its placement at %d", mid.ClockS, j.Clock)
		}
		ref := *j
		ref.Placement = []int{1}
		for ref.Clock < mid.ClockS {
			ref.Advance(60)
		}
		if ref.Progress != mid.Progress || ref.Service != mid.ServiceGPUS {
			t.Errorf("at %d s the GPU has progress %v, service %d; the model %v, %d", mid.ClockS, mid.Progress, mid.ServiceGPUS, ref.Progress, ref.Service)
		}
	}
	var done *events.GPUStatus
	testbus.WaitFor(t, "the job to complete", 10*time.Second, func() bool {
		done = log.last(events.ChangeCompleted, "j1")
		return done != nil
	})
	got := done.Training
	if got == nil {
		t.Fatal("the completion carries no training state")
	}
	if ws := want.State(); !got.Done || got.CompletionS != ws.CompletionS || got.Progress != ws.Progress || got.ServiceGPUS != ws.ServiceGPUS || got.Epoch != ws.Epoch {
		t.Errorf("the GPU completed it as %+v; the model as %+v", *got, ws)
	}
	if len(done.Jobs) != 0 {
		t.Errorf("the GPU still holds %d jobs after the completion", len(done.Jobs))
	}
}

// TestATrainingJobIsPreemptedWithItsState: a preempted training job's
// answer carries its state stepped to a whole interval.
func TestATrainingJobIsPreemptedWithItsState(t *testing.T) {
	m, err := pollux.Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	j := placedJob(t, m, pollux.Spec{Name: "cifar", App: "cifar10", Replicas: 1, Batch: 128})
	nc, _ := startTrainingNode(t, m, 600)
	ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "j1", TTLMillis: 60000, Job: trainingPart(j)})
	ctl(t, nc, events.Control{Op: events.OpCommit, JobID: "j1"})
	testbus.WaitFor(t, "two intervals to pass", 5*time.Second, func() bool {
		st := ctl(t, nc, events.Control{Op: events.OpDescribe}).Status
		return len(st.Jobs) == 1 && st.Jobs[0].Training.ClockS >= j.Clock+120
	})
	r := ctl(t, nc, events.Control{Op: events.OpPreempt, JobID: "j1"})
	if len(r.Stopped) != 1 || r.Stopped[0].Training == nil {
		t.Fatalf("preempt: %+v", r)
	}
	st := r.Stopped[0].Training
	ref := *j
	ref.Placement = []int{1}
	for ref.Clock < st.ClockS {
		ref.Advance(60)
	}
	if st.Progress != ref.Progress || st.Done || st.ClockS-j.Clock < 120 || r.Stopped[0].ProgressS != st.Progress {
		t.Errorf("stopped with %+v (progress_s %v); the model at %d s has progress %v", *st, r.Stopped[0].ProgressS, ref.Clock, ref.Progress)
	}
}

// TestABadTrainingPartIsRefusedNamingTheField: a GPU without a training
// model, an unknown application, a part without its placement, each
// refused with the field at fault.
func TestABadTrainingPartIsRefusedNamingTheField(t *testing.T) {
	m, err := pollux.Load(tracedir.Pollux(t))
	if err != nil {
		t.Fatal(err)
	}
	j := placedJob(t, m, pollux.Spec{Name: "c", App: "cifar10", Replicas: 1, Batch: 128})
	nc, _ := startTrainingNode(t, nil, 1)
	if r := ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "j1", Job: trainingPart(j)}); r.Error == nil || r.Error.Field != "job.training" {
		t.Errorf("a GPU without a model: %+v", r)
	}
	nc, _ = startTrainingNode(t, m, 1)
	p := trainingPart(j)
	p.Training.Job.App = "gpt5"
	if r := ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "j1", Job: p}); r.Error == nil || r.Error.Field != "job.training" || !strings.Contains(r.Error.Message, "gpt5") {
		t.Errorf("an unknown application: %+v", r)
	}
	p = trainingPart(j)
	p.Training.State.Placement = nil
	if r := ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "j1", Job: p}); r.Error == nil || r.Error.Field != "job.training.state.placement" {
		t.Errorf("no placement: %+v", r)
	}
}

// TestAHungGPUsTrainingJobLosesTheHang: a hang of 2,000 simulated seconds
// while a training job runs makes it complete about that much later than
// the model without the hang (it ran nothing meanwhile), and its clock
// counts the lost time.
func TestAHungGPUsTrainingJobLosesTheHang(t *testing.T) {
	m, j, want := cifarJob(t)
	nc, log := startTrainingNode(t, m, 20000)
	ctl(t, nc, events.Control{Op: events.OpReserve, JobID: "j1", TTLMillis: 60000, Job: trainingPart(j)})
	ctl(t, nc, events.Control{Op: events.OpCommit, JobID: "j1"})
	// 100 ms of wall time at 20,000× is 2,000 simulated seconds.
	if r := ctl(t, nc, events.Control{Op: events.OpChaos, Chaos: &events.ChaosControl{Action: "hang", DurationMS: 100}}); !r.OK {
		t.Fatalf("hang: %+v", r)
	}
	var done *events.GPUStatus
	testbus.WaitFor(t, "the job to complete", 10*time.Second, func() bool {
		done = log.last(events.ChangeCompleted, "j1")
		return done != nil
	})
	late := done.Training.CompletionS - want.Completion
	if late < 1900 || late > 4000 || done.Training.Progress != want.Progress {
		t.Errorf("completed at %d s, %d s after the model without the hang (want about 2,000: the hang's time, plus the wall's jitter)", done.Training.CompletionS, late)
	}
}
