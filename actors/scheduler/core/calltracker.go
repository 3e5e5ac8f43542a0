package core

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// callTracker is the calls the core has in flight: every request it sent
// with a reply subject under its inbox and has not had answered, when it
// went, and what it was for (call). It numbers them, matches an answer
// with its call, says which have timed out, and keeps the bookkeeping of
// describes: one in flight per GPU, at most maxDescribesPerNode per node,
// and when each GPU last left one unanswered. It decides nothing: the
// core hands an answer, or a timeout, to what the call was for.
type callTracker struct {
	// inbox prefixes every reply subject (Config.Inbox); timeout is how
	// long a call waits for its answer (Config.CallTimeout).
	inbox   string
	timeout time.Duration
	// next numbers the calls; byReply holds those in flight.
	next    uint64
	byReply map[string]*call
	// byGPU is the describe in flight per GPU (its reply subject), perNode
	// the count of describes in flight per node.
	byGPU   map[string]string
	perNode map[string]int
	// waiting are, per node, the GPUs a heartbeat named to describe that
	// found the node's describes all in flight, in the order named.
	waiting map[string][]waitingDescribe
	// silentSince is when each GPU's last describe went unanswered, for
	// silenceMemory: a heartbeat asks the GPUs that have not been silent
	// before those that have (order).
	silentSince map[string]time.Time
}

func newCallTracker(inbox string, timeout time.Duration) *callTracker {
	return &callTracker{inbox: inbox, timeout: timeout, byReply: map[string]*call{}, byGPU: map[string]string{},
		perNode: map[string]int{}, silentSince: map[string]time.Time{}, waiting: map[string][]waitingDescribe{}}
}

// waitingDescribe is a GPU to describe once its node has a slot, and the
// heartbeat (beat) that named it.
type waitingDescribe struct {
	gpu  string
	beat uint64
}

// wait keeps gpu to describe once node has a slot (its latest beat, once).
func (t *callTracker) wait(node, gpu string, beat uint64) {
	for i, w := range t.waiting[node] {
		if w.gpu == gpu {
			t.waiting[node][i].beat = max(w.beat, beat)
			return
		}
	}
	t.waiting[node] = append(t.waiting[node], waitingDescribe{gpu: gpu, beat: beat})
}

// nextWaiting takes the first GPU of node waiting for a slot.
func (t *callTracker) nextWaiting(node string) (waitingDescribe, bool) {
	ws := t.waiting[node]
	if len(ws) == 0 {
		return waitingDescribe{}, false
	}
	if len(ws) == 1 {
		delete(t.waiting, node)
	} else {
		t.waiting[node] = ws[1:]
	}
	return ws[0], true
}

// forgetWaiting forgets node's GPUs waiting for a slot: a newer heartbeat
// names what to ask.
func (t *callTracker) forgetWaiting(node string) { delete(t.waiting, node) }

// open numbers c and keeps it in flight: its number, which the request
// names (events.Control.Call: batched controls share one reply subject in
// the shell, and the answer names the call back), and the reply subject
// its answer comes on. A describe (a call for no placement, stop or
// training report) counts against its GPU and node.
func (t *callTracker) open(c *call) (number, reply string) {
	t.next++
	number = strconv.FormatUint(t.next, 10)
	reply = t.inbox + number
	t.byReply[reply] = c
	if c.isDescribe() {
		t.byGPU[c.gpu] = reply
		t.perNode[c.node]++
	}
	return number, reply
}

// isDescribe says a call is a describe: for no placement, stop or
// training report.
func (c *call) isDescribe() bool { return c.neg == nil && c.stop == nil && c.report == "" }

// isReply says subject is under the core's inbox: the answer to a call,
// or a late or forged one.
func (t *callTracker) isReply(subject string) bool { return strings.HasPrefix(subject, t.inbox) }

// take is the call reply answers, no longer in flight (false: none is).
func (t *callTracker) take(reply string) (*call, bool) {
	c, ok := t.byReply[reply]
	if ok {
		t.end(reply)
	}
	return c, ok
}

// end forgets a call: answered, or timed out.
func (t *callTracker) end(reply string) {
	c, ok := t.byReply[reply]
	if !ok {
		return
	}
	delete(t.byReply, reply)
	if !c.isDescribe() {
		return
	}
	if t.byGPU[c.gpu] == reply {
		delete(t.byGPU, c.gpu)
	}
	if t.perNode[c.node]--; t.perNode[c.node] <= 0 {
		delete(t.perNode, c.node)
	}
}

// describing says gpu has a describe in flight that has not timed out by
// now (one that has is forgotten). When it has, and node's heartbeat beat
// names gpu, the answer is to grant what that heartbeat would have (its
// beat, the latest), as a describe the heartbeat sent would: a restart's
// reads of the journal's GPUs go before any heartbeat, and without it the
// lease would depend on which came first, the answer or the heartbeat.
func (t *callTracker) describing(node, gpu string, beat uint64, now time.Time) bool {
	reply, busy := t.byGPU[gpu]
	if !busy {
		return false
	}
	c := t.byReply[reply]
	if now.Sub(c.sent) >= t.timeout {
		t.end(reply)
		return false
	}
	if beat > c.beat && c.node == node {
		c.beat = beat
	}
	return true
}

// nodeFull says node has as many describes in flight as it may.
func (t *callTracker) nodeFull(node string) bool { return t.perNode[node] >= maxDescribesPerNode }

// deadline is when the earliest call in flight times out, zero when none
// is in flight.
func (t *callTracker) deadline() time.Time {
	var first time.Time
	for _, c := range t.byReply {
		if first.IsZero() || c.sent.Before(first) {
			first = c.sent
		}
	}
	if first.IsZero() {
		return first
	}
	return first.Add(t.timeout)
}

// late are the reply subjects of the calls unanswered for the timeout by
// now, in the order they were sent (map order is random; what a timeout
// leads to must not be). They stay in flight until taken.
func (t *callTracker) late(now time.Time) []string {
	var late []string
	for reply, c := range t.byReply {
		if now.Sub(c.sent) >= t.timeout {
			late = append(late, reply)
		}
	}
	slices.SortFunc(late, func(a, b string) int { return cmp.Compare(callNumber(a), callNumber(b)) })
	return late
}

// silent remembers that gpu left a describe unanswered at now.
func (t *callTracker) silent(gpu string, now time.Time) { t.silentSince[gpu] = now }

// heard forgets that gpu was silent: it answered.
func (t *callTracker) heard(gpu string) { delete(t.silentSince, gpu) }

// forgetSilences forgets the silences older than silenceMemory.
func (t *callTracker) forgetSilences(now time.Time) {
	for gpu, at := range t.silentSince {
		if now.Sub(at) >= silenceMemory {
			delete(t.silentSince, gpu)
		}
	}
}

// order is the order a heartbeat's GPUs to describe are asked in: those
// whose last describe was answered, or who were never asked, first, in
// the heartbeat's order; then the unanswered ones, longest silent first.
// With at most maxDescribesPerNode GPUs to ask it changes nothing: all
// are asked. With more, the same first few silent ones no longer take
// every slot at every heartbeat (a node naming ten GPUs that never
// answer would have its ninth and tenth never asked).
func (t *callTracker) order(gpus []string) []string {
	if len(t.silentSince) == 0 || len(gpus) <= maxDescribesPerNode {
		return gpus // all are asked, in the heartbeat's order
	}
	var fresh, silent []string
	for _, g := range gpus {
		if _, ok := t.silentSince[g]; ok {
			silent = append(silent, g)
		} else {
			fresh = append(fresh, g)
		}
	}
	slices.SortStableFunc(silent, func(a, b string) int { return t.silentSince[a].Compare(t.silentSince[b]) })
	return append(fresh, silent...)
}

// callNumber is the number a call's reply subject ends with.
func callNumber(reply string) uint64 {
	n, _ := strconv.ParseUint(reply[strings.LastIndexByte(reply, '.')+1:], 10, 64)
	return n
}
