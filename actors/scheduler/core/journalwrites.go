package core

import "github.com/gpusched/gpusched/model"

// journalWrites is what the core owes the job journal's store: the jobs
// whose record changed in this step (written once each at the step's end)
// and whether the store can take writes now, as the control plane said.
// Without a journal (journaled false) nothing is ever owed.
type journalWrites struct {
	journaled bool
	changed   []*job
	// down is why the store cannot take writes (OpStoreDown; "" when it
	// can): meanwhile a submission is refused on "store" at once.
	down string
}

// touch marks j's record as changed.
func (w *journalWrites) touch(j *job) {
	if !w.journaled || j.touched {
		return
	}
	j.touched = true
	w.changed = append(w.changed, j)
}

// flush hands write each job whose record changed and is still to write,
// once, in the order they changed, and forgets them.
func (w *journalWrites) flush(write func(*job)) {
	for _, j := range w.changed {
		if j.touched {
			j.touched = false
			write(j)
		}
	}
	w.changed = w.changed[:0]
}

// owed says some record changed since the last take.
func (w *journalWrites) owed() bool { return len(w.changed) > 0 }

// refusal is the error a submission gets while the store cannot take
// writes (nil while it can, or without a journal): at once, where a write
// would wait out the store's timeout.
func (w *journalWrites) refusal() *model.FieldError {
	if !w.journaled || w.down == "" {
		return nil
	}
	return model.Errorf("store", "not accepted: the job journal cannot store it now (%s); submit it again once the store has room", w.down)
}
