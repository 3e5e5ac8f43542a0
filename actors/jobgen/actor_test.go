package jobgen

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/simclock"
)

// TestASubmissionNoSchedulerHeardIsSentAgain: a job arrives while no
// scheduler listens (one is restarting). The generator sends it again
// until one answers, and the scheduler gets it once. Before, it was
// dropped with a warning: simtest seed 389 with scheduler kills accepted
// 768 of its 769 jobs.
func TestASubmissionNoSchedulerHeardIsSentAgain(t *testing.T) {
	_, nc := testbus.Start(t)
	core, logs := observer.New(zap.WarnLevel)
	subjects := events.NewSubjects("")
	finished := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, Config{Subjects: subjects, Conn: nc, Clock: simclock.NewScaled(time.Now(), 1), Logger: zap.New(core),
		Source:   NewListSource([]Arrival{{Name: "while-no-scheduler", Body: []byte(`{"name":"while-no-scheduler"}`)}}),
		Finished: func(n int) { finished <- n }})
	testbus.WaitFor(t, "the generator to find no scheduler", 10*time.Second, func() bool {
		return logs.FilterMessage("no scheduler to submit to; trying again").Len() > 0
	})
	var received atomic.Int32
	sub, err := nc.Subscribe(subjects.JobSubmit(), func(m *nats.Msg) {
		received.Add(1)
		m.Respond([]byte(`{"job_id":"j-1","state":"queued"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	select {
	case n := <-finished:
		if n != 1 || received.Load() != 1 {
			t.Fatalf("the generator submitted %d jobs, the scheduler received %d submissions; want 1 and 1", n, received.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the job was not submitted once a scheduler listened (%d received)", received.Load())
	}
}
