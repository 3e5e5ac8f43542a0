package core

import (
	"slices"
	"time"

	"github.com/gpusched/gpusched/events"
)

// runningJobs is the jobs placed and not yet ended, in the order they
// began running (list), and for each GPU the running jobs that have had it
// among their GPUs since they began running (on): a superset of those
// that have it now (onGPU filters it), so that a GPU's status is
// reconciled against its own jobs, not against every running one. Which
// jobs enter and leave it, and when, is the core's.
type runningJobs struct {
	list []*job
	on   map[string][]*job
}

func newRunningJobs() *runningJobs { return &runningJobs{on: map[string][]*job{}} }

// add puts j on the list at position i, and in the index of each GPU it
// runs on.
func (r *runningJobs) add(j *job, i int) {
	r.list = slices.Insert(r.list, i, j)
	j.inRunning = true
	for _, g := range j.gpus {
		r.addShare(j, g)
	}
}

// addAdopted puts j, read back from its GPUs after a restart, after the
// running jobs that began before it or at the same instant and were
// submitted before it: those a restart reads back all begin at one
// instant, and among them the order is their submission's, not the order
// their GPUs answered in (it is the order a lost GPU's jobs are listed in
// its gpu.down and queued again in).
func (r *runningJobs) addAdopted(j *job) {
	i := len(r.list)
	for i > 0 && r.list[i-1].stintAt.Equal(j.stintAt) && r.list[i-1].seq > j.seq {
		i--
	}
	r.add(j, i)
}

// addShare notes that running job j runs on gpu (a share added to j.gpus
// while it runs; add notes those it starts with).
func (r *runningJobs) addShare(j *job, gpu string) {
	if !j.inRunning {
		return
	}
	on := r.on[gpu]
	if !slices.Contains(on, j) {
		r.on[gpu] = append(on, j)
	}
}

// onGPU is the running jobs whose GPUs include gpu, in the order they
// were indexed (not the list's: inOrder puts them in it). It drops from
// the GPU's index the jobs that no longer run there. The slice is the
// index's own: read it before the next change.
func (r *runningJobs) onGPU(gpu string) []*job {
	on := r.on[gpu]
	kept := on[:0]
	for _, j := range on {
		if j.inRunning && slices.Contains(j.gpus, gpu) {
			kept = append(kept, j)
		}
	}
	clear(on[len(kept):])
	if len(kept) == 0 {
		delete(r.on, gpu)
		return nil
	}
	r.on[gpu] = kept
	return kept
}

// inOrder sorts jobs of the list in the list's order.
func (r *runningJobs) inOrder(jobs []*job) {
	if len(jobs) < 2 {
		return
	}
	at := make(map[*job]int, len(jobs))
	for i, j := range r.list {
		if slices.Contains(jobs, j) {
			at[j] = i
		}
	}
	slices.SortFunc(jobs, func(a, b *job) int { return at[a] - at[b] })
}

// remove takes j off the list (its GPUs' indexes forget it as they are
// read: onGPU).
func (r *runningJobs) remove(j *job) {
	if i := slices.Index(r.list, j); i >= 0 {
		r.list = slices.Delete(r.list, i, i+1)
	}
	j.inRunning = false
}

// len is how many jobs run.
func (r *runningJobs) len() int { return len(r.list) }

// usage counts what each tenant's running jobs hold now.
func (r *runningJobs) usage() usage {
	u := usage{}
	for _, j := range r.list {
		u.add(j, j.gpus)
	}
	return u
}

// jobsOn lists the jobs believed to run on gpu at incarnation upTo or
// older, with the progress the GPU last reported for each (from reported;
// else estimated at now). A job a newer incarnation accepted (the
// scheduler placed it there before hearing of the old one's death) is not
// among them, nor one whose share there completed.
func (r *runningJobs) jobsOn(gpu string, upTo int, reported []events.GPUJob, now time.Time) []events.GPUJob {
	var out []events.GPUJob
	on := slices.Clone(r.onGPU(gpu))
	r.inOrder(on)
	for _, j := range on {
		// A share that completed there is not lost with the GPU.
		if j.incarnationOn(gpu) > upTo || slices.Contains(j.shardsDone, gpu) {
			continue
		}
		gj := events.GPUJob{JobID: j.id, Name: j.spec.Name, Priority: j.spec.Priority, State: events.GPUJobRunning,
			ProgressS: j.estimate(now), WorkS: j.work()}
		for _, rep := range reported {
			if rep.JobID == j.id {
				gj = rep
			}
		}
		out = append(out, gj)
	}
	return out
}
