package auth

import "fmt"

// DefaultReadersPerAccount is how many consumers of the event stream one
// importing account (an observer's or an admin's: each user has their
// own) may hold at once. A dashboard, a log, a record and a check each
// hold one, and an ordered reader holds a second for a while after a
// reconnect: 16 is twice what one user running all of them needs.
const DefaultReadersPerAccount = 16

// Readers holds each account that reads the event stream through an
// import to a bound on the consumers it has on it, and refuses a push
// consumer from such an account (its deliver subject would lie in the
// control account's subject space, where no reader of another account can
// receive it: it could only deliver stored events onto the control
// plane's own subjects). The consumers are attributed by the account the
// server names as the caller of the JetStream API (its audit advisory),
// never by their names or descriptions.
type Readers struct {
	bound   int
	account map[string]string // consumer → the account that made it
	held    map[string]int    // account → consumers it holds
}

// NewReaders holds every account to bound consumers (0: no bound).
func NewReaders(bound int) *Readers {
	return &Readers{bound: bound, account: map[string]string{}, held: map[string]int{}}
}

// Created is told that account made consumer (push: with a deliver
// subject). It returns why the consumer must be deleted, or "" to keep
// it (then counted against account until Deleted).
func (r *Readers) Created(account, consumer string, push bool) string {
	if push {
		return "a push consumer (a deliver subject) is refused: it can deliver only onto the control account's subjects; read with a pull or ordered consumer"
	}
	if _, known := r.account[consumer]; known {
		return "" // an update of a consumer it already holds
	}
	if r.bound > 0 && r.held[account] >= r.bound {
		return fmt.Sprintf("the account holds %d consumers of the event stream already, its bound: delete one first", r.held[account])
	}
	r.account[consumer] = account
	r.held[account]++
	return ""
}

// Deleted is told consumer is gone (deleted, or expired when idle).
func (r *Readers) Deleted(consumer string) {
	account, known := r.account[consumer]
	if !known {
		return
	}
	delete(r.account, consumer)
	if r.held[account]--; r.held[account] <= 0 {
		delete(r.held, account)
	}
}

// Held is how many consumers account holds.
func (r *Readers) Held(account string) int { return r.held[account] }

// Only keeps the consumers of exist and forgets the others (a deletion
// whose advisory was missed).
func (r *Readers) Only(exist map[string]bool) {
	for consumer := range r.account {
		if !exist[consumer] {
			r.Deleted(consumer)
		}
	}
}
