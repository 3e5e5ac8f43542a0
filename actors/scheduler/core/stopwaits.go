package core

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// stopWaits are the jobs stopped on a GPU that did not answer the stop:
// each may still run there, so it is placed nowhere else until every GPU
// it awaits shows it no longer runs it (a status without it, a later
// incarnation, or its death), and those GPUs are asked again every call
// timeout meanwhile. A job's own record says which GPUs (job.awaiting,
// with the incarnation the stop went to) and when they are asked next
// (job.awaitAskAt): the journal keeps both.
type stopWaits struct {
	jobs map[*job]bool
	// writes are told of each job whose wait changed: the journal keeps
	// what it awaits.
	writes *journalWrites
}

func newStopWaits(writes *journalWrites) *stopWaits {
	return &stopWaits{jobs: map[*job]bool{}, writes: writes}
}

// add makes j await gpu at incarnation inc (a stop sent there went
// unanswered); a job that awaited nothing asks its GPUs first at askAt.
func (w *stopWaits) add(j *job, gpu string, inc int, askAt time.Time) {
	if j.awaiting == nil {
		j.awaiting = map[string]int{}
	}
	if len(j.awaiting) == 0 {
		j.awaitAskAt = askAt
	}
	j.awaiting[gpu] = inc
	w.jobs[j] = true
	w.writes.touch(j)
}

// confirm clears gpu from what j awaits: the GPU showed it no longer
// runs j.
func (w *stopWaits) confirm(j *job, gpu string) {
	delete(j.awaiting, gpu)
	if len(j.awaiting) == 0 {
		delete(w.jobs, j)
	}
	w.writes.touch(j)
}

// confirmOn confirms gpu for the jobs awaiting it whose recorded
// incarnation passes done (the GPU died, or came back as a later one), in
// submission order; it says whether any was.
func (w *stopWaits) confirmOn(gpu string, done func(inc int) bool) bool {
	confirmed := false
	for _, j := range w.on(gpu) {
		if done(j.awaiting[gpu]) {
			w.confirm(j, gpu)
			confirmed = true
		}
	}
	return confirmed
}

// any says some job awaits a GPU.
func (w *stopWaits) any() bool { return len(w.jobs) > 0 }

// on are the jobs that await gpu, in submission order.
func (w *stopWaits) on(gpu string) []*job {
	var on []*job
	for j := range w.jobs {
		if _, waits := j.awaiting[gpu]; waits {
			on = append(on, j)
		}
	}
	return bySeq(on)
}

// due are the jobs whose GPUs are to be asked again at wall, in
// submission order; each is asked next every after that.
func (w *stopWaits) due(wall time.Time, every time.Duration) []*job {
	var due []*job
	for j := range w.jobs {
		if !wall.Before(j.awaitAskAt) {
			due = append(due, j)
		}
	}
	for _, j := range due {
		j.awaitAskAt = wall.Add(every)
	}
	return bySeq(due)
}

// gpusOf are the GPUs j awaits, by id.
func gpusOf(j *job) []string { return slices.Sorted(maps.Keys(j.awaiting)) }

// nextAsk hands earlier each waiting job's next ask.
func (w *stopWaits) nextAsk(earlier func(time.Time)) {
	for j := range w.jobs {
		earlier(j.awaitAskAt)
	}
}

// bySeq sorts jobs in submission order.
func bySeq(jobs []*job) []*job {
	slices.SortFunc(jobs, func(a, b *job) int { return cmp.Compare(a.seq, b.seq) })
	return jobs
}
