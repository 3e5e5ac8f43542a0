package pollux

import "slices"

// DemotionThreshold is Tiresias's H: a job that has run 16 GPU-hours
// (executed wall seconds × its GPUs) leaves the first queue (§6).
const DemotionThreshold = 16 * 3600

// Tiresias is Tiresias+TunedJobs (§6): discretised two-queue LAS with
// skip-fit admission and most-free-node placement; a running job keeps
// its GPUs.
type Tiresias struct {
	q0, q1    []string
	running   map[string]bool
	lastCheck map[string]int
	executed  map[string]int
}

// NewTiresias is the policy before its first call.
func NewTiresias() *Tiresias {
	return &Tiresias{running: map[string]bool{}, lastCheck: map[string]int{}, executed: map[string]int{}}
}

// Name is "tiresias".
func (*Tiresias) Name() string { return "tiresias" }

// Allocate is one call of §6.
func (p *Tiresias) Allocate(t int, active []*Job, c Cluster, current Alloc) (Alloc, error) {
	byName := make(map[string]*Job, len(active))
	for _, j := range active {
		byName[j.Name] = j
	}
	gone := func(name string) bool { return byName[name] == nil }
	// 1. Purge the jobs no longer active.
	p.q0, p.q1 = slices.DeleteFunc(p.q0, gone), slices.DeleteFunc(p.q1, gone)
	for name := range p.running {
		if gone(name) {
			delete(p.running, name)
		}
	}
	w := Alloc{}
	for name, nodes := range current {
		w[name] = nodes
	}
	// 2. Admit the new ones, pending, at the end of the first queue.
	for _, j := range active {
		if _, known := p.running[j.Name]; !known {
			p.running[j.Name] = false
			p.q0 = append(p.q0, j.Name)
		}
	}
	// 3. Charge the running jobs the time since the last call; demote.
	for _, j := range active {
		if !p.running[j.Name] {
			p.lastCheck[j.Name] = t
			continue
		}
		p.executed[j.Name] += t - p.lastCheck[j.Name]
		p.lastCheck[j.Name] = t
		if i := slices.Index(p.q0, j.Name); i >= 0 && p.executed[j.Name]*j.Replicas >= DemotionThreshold {
			p.q0 = slices.Delete(p.q0, i, i+1)
			p.q1 = append(p.q1, j.Name)
		}
	}
	// 4. Skip-fit admission in queue order.
	free := c.TotalGPUs()
	order := append(slices.Clone(p.q0), p.q1...)
	for _, name := range order {
		if q := byName[name].Replicas; q <= free {
			p.running[name] = true
			free -= q
		} else {
			p.running[name] = false
			delete(w, name)
		}
	}
	// 5. Place the jobs admitted without GPUs; the others keep theirs.
	table := newFreeTable(c, w)
	for _, name := range order {
		if _, has := w[name]; p.running[name] && !has {
			w[name] = table.take(byName[name].Replicas)
		}
	}
	return w, nil
}
