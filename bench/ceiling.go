package bench

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/events"
)

// The ceiling: a placement's messages with nothing behind them. Ceiling
// sends, for each submission, the messages the cluster sends for a
// placement on the reference cluster (11.8-12 per placement, counted on
// the bus; its cancel aside), at their sizes (below), through the
// same connections and goroutine hand-offs: a client's request; a
// "scheduler" (one connection, its subscriptions' callbacks feeding one
// mailbox read by one loop) that publishes three job events, sends one
// batch to the node and waits for its two answers; a "node host" (one
// connection) whose callback hands each item to an actor goroutine (the
// node actor's, the GPU actor's), which answers; then the commit batch,
// the GPU's status event after it (the scheduler hears it), two more job
// events and the reply. Nothing is decoded, encoded, decided or stored:
// the bodies are bytes made once. So its placements/s is what the bus
// and the actors' hand-offs allow on this machine before any work; the
// whole path's rows can only be slower.

// Sizes of the messages' bodies, in bytes: those the bench's job's
// placements send on the reference cluster, counted on the bus by
// CountPlacementMessages (80 placements, 32 in flight) and kept within
// 10 % of it, kind by kind, by TestTheCeilingsMessagesAreAPlacementsSizes.
// The status is a mean: a GPU's status names its jobs, so it grows as
// the round fills the GPU (3,040-3,280 bytes over a round, run to run).
// The commit is a commit's bytes per placement: the cluster may commit
// two placements on one node in one batch (0.85-1 batch per placement).
const (
	ceilingReservation = 607
	ceilingAnswer      = 47
	ceilingCommit      = 180
	ceilingEvent       = 735
	ceilingStatus      = 3150
)

// body is n bytes of JSON-looking filler.
func body(n int) []byte {
	b := bytes.Repeat([]byte(`"x",`), n/4+1)[:n]
	b[0], b[n-1] = '[', ']'
	return b
}

// ceilingPlacement is one submission the ceiling's scheduler is placing.
type ceilingPlacement struct {
	reply    string
	answered int
}

// CeilingResult is what Ceiling measured.
type CeilingResult struct {
	// Rate is placements per second, Window in flight.
	Rate float64
	// Latency is the submit→placed round trips, one submission at a time.
	Latency Latencies
	// CPU is the process's CPU time per placement while Rate was measured
	// (0 where the platform does not say).
	CPU time.Duration
}

// Ceiling runs the placement's message pattern on c's bus (the client
// over TCP or in-process; the scheduler and node host in-process, as the
// cluster's are): n submissions one at a time for the latency, then
// rounds×perRound, perRound at a time with window in flight, for the rate.
func Ceiling(c *cluster.Cluster, tcp bool, n, rounds, perRound, window int) (CeilingResult, error) {
	var res CeilingResult
	prefix := "bench-ceiling." + strings.TrimPrefix(nats.NewInbox(), "_INBOX.")
	// The real subjects under a prefix of its own: one node, one GPU.
	sj := events.NewSubjects(prefix)
	submit, batch, status := sj.JobSubmit(), sj.NodeBatch("node-0"), sj.GPUEvent("node-0", "gpu-0", events.GPUStatusType)
	eventSubjects := []string{sj.JobEvent(events.JobSubmitted), sj.JobEvent(events.JobQueued), sj.SchedEvent(events.SchedDecision),
		sj.JobEvent(events.JobPlaced), sj.JobEvent(events.JobStarted)}
	reservationBody, commitBody, answerBody, eventBody, statusBody, reply := body(ceilingReservation), body(ceilingCommit), body(ceilingAnswer), body(ceilingEvent), body(ceilingStatus), []byte(replyBody)

	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	dial := func(tcp bool) (*nats.Conn, error) {
		nc, err := Client(c, tcp)
		if err == nil {
			conns = append(conns, nc)
		}
		return nc, err
	}
	client, err := dial(tcp)
	if err != nil {
		return res, err
	}
	sched, err := dial(false)
	if err != nil {
		return res, err
	}
	host, err := dial(false)
	if err != nil {
		return res, err
	}

	// The node host: a batch with a reply is a reservation (the node
	// actor and the GPU actor answer it); one without is a commit (the
	// GPU actor publishes its status).
	type item struct{ reply string }
	nodeActor, gpuActor := make(chan item, 4096), make(chan item, 4096)
	done := make(chan struct{})
	defer close(done)
	actor := func(mail chan item, commits bool) {
		for {
			select {
			case it := <-mail:
				switch {
				case it.reply != "":
					host.Publish(it.reply, answerBody)
				case commits:
					host.Publish(status, statusBody)
				}
			case <-done:
				return
			}
		}
	}
	go actor(nodeActor, false)
	go actor(gpuActor, true)
	if _, err := host.Subscribe(batch, func(m *nats.Msg) {
		nodeActor <- item{m.Reply}
		gpuActor <- item{m.Reply}
	}); err != nil {
		return res, err
	}

	// The scheduler: every subscription's callback feeds one mailbox.
	mailbox := make(chan *nats.Msg, 4096)
	inbox := nats.NewInbox()
	for _, subj := range []string{submit, status, inbox + ".*"} {
		sub, err := sched.Subscribe(subj, func(m *nats.Msg) { mailbox <- m })
		if err != nil {
			return res, err
		}
		sub.SetPendingLimits(-1, -1)
	}
	// The last commits' statuses come after the last replies: the run
	// ends when the scheduler has heard every one.
	total, allHeard := n+n/10+rounds*perRound, make(chan struct{})
	go func() {
		placing := map[string]*ceilingPlacement{}
		heard := 0
		seq := 0
		for {
			var m *nats.Msg
			select {
			case m = <-mailbox:
			case <-done:
				return
			}
			switch {
			case m.Subject == status:
				if heard++; heard == total {
					close(allHeard)
				}
			case m.Subject == submit:
				for _, subj := range eventSubjects[:3] {
					sched.Publish(subj, eventBody)
				}
				seq++
				call := strconv.Itoa(seq)
				placing[call] = &ceilingPlacement{reply: m.Reply}
				sched.PublishRequest(batch, inbox+"."+call, reservationBody)
			case strings.HasPrefix(m.Subject, inbox):
				call := m.Subject[len(inbox)+1:]
				p := placing[call]
				if p == nil {
					continue
				}
				if p.answered++; p.answered < 2 {
					continue
				}
				delete(placing, call)
				sched.Publish(batch, commitBody) // the commit: no answer
				for _, subj := range eventSubjects[3:] {
					sched.Publish(subj, eventBody)
				}
				sched.Publish(p.reply, reply)
			}
		}
	}()
	for _, nc := range conns {
		if err := nc.Flush(); err != nil {
			return res, err
		}
	}

	if res.Latency, err = requestLatencies(client, submit, n); err != nil {
		return res, fmt.Errorf("the ceiling's submissions: %w", err)
	}
	placed, took := 0, 0.0
	for round := 0; round < rounds; round++ {
		cpu0 := processCPU()
		replies, d, err := Pipelined(client, submit, func(int) []byte { return []byte(submitBody) }, perRound, window)
		if err != nil {
			return res, fmt.Errorf("the ceiling's round %d: %w", round, err)
		}
		res.CPU += processCPU() - cpu0
		placed += len(replies)
		took += d.Seconds()
	}
	select {
	case <-allHeard:
	case <-time.After(5 * time.Second):
		return res, fmt.Errorf("the ceiling's scheduler did not hear %d GPU statuses in 5 s", total)
	}
	res.Rate = float64(placed) / took
	res.CPU /= time.Duration(max(1, placed))
	return res, nil
}
