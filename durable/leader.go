package durable

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Keys of the control plane's leadership in the job bucket. leaderKey
// changes only when a control plane takes the store over (compare-and-set
// on its revision); aliveKey is renewed by the one that holds it, every
// write of it fenced as the journal's are.
const (
	leaderKey = "meta.leader"
	aliveKey  = "meta.alive"
)

// Headers of a JetStream publish that the server stores only if the last
// message on another subject of the same stream has the given sequence:
// the fence every write of a leading control plane carries.
const (
	expectedLastSubjectSeq        = "Nats-Expected-Last-Subject-Sequence"
	expectedLastSubjectSeqSubject = "Nats-Expected-Last-Subject-Sequence-Subject"
)

// ErrDeposed says another control plane took the store over: a write of
// this one was refused by the store's fence.
var ErrDeposed = errors.New("another control plane took over the job journal")

// ErrLeadTaken says another control plane took the store over between
// reading its leadership and taking it.
var ErrLeadTaken = errors.New("another control plane took the job journal first")

// FencesRecords says whether the store fences each record this journal
// writes (a store of one replica), besides its renewals and meta keys.
func (j *Journal) FencesRecords() bool { return j.fenceRecords }

// Lead takes the store over for this control plane (holder names it in
// the key): a compare-and-set of the leadership key on the revision read
// just before. From then on every write of the journal is fenced on the
// new revision: the store refuses it once another control plane has led
// after it (ErrDeposed). It returns the revision, this leadership's term.
func (j *Journal) Lead(ctx context.Context, holder string) (uint64, error) {
	var rev uint64
	switch e, err := j.kv.Get(ctx, leaderKey); {
	case err == nil:
		rev = e.Revision()
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return 0, err
	}
	var term uint64
	var err error
	if rev == 0 {
		term, err = j.kv.Create(ctx, leaderKey, []byte(holder))
	} else {
		term, err = j.kv.Update(ctx, leaderKey, []byte(holder), rev)
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || isFenced(err) {
			return 0, ErrLeadTaken
		}
		return 0, err
	}
	j.term.Store(term)
	return term, nil
}

// Term is the leadership this journal writes under (0: none, unfenced).
func (j *Journal) Term() uint64 { return j.term.Load() }

// Renew writes the alive mark of the leading control plane, fenced: a
// standby that sees none for a lease takes the store over.
func (j *Journal) Renew(ctx context.Context) error {
	return j.put(ctx, aliveKey, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)))
}

// AliveMarks sends a value each time the leading control plane renews
// its alive mark (and once for the mark there now), until ctx ends.
func (j *Journal) AliveMarks(ctx context.Context) (<-chan struct{}, error) {
	w, err := j.kv.Watch(ctx, aliveKey)
	if err != nil {
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue // the end of the values there at the start
				}
				select {
				case out <- struct{}{}:
				default: // one pending mark says as much as many
				}
			}
		}
	}()
	return out, nil
}

// fence is the header of a fenced write, nil when unfenced.
func (j *Journal) fence() nats.Header {
	term := j.term.Load()
	if term == 0 {
		return nil
	}
	return nats.Header{expectedLastSubjectSeq: []string{strconv.FormatUint(term, 10)},
		expectedLastSubjectSeqSubject: []string{j.subject + leaderKey}}
}

// put writes key, fenced, waiting for the store.
func (j *Journal) put(ctx context.Context, key string, value []byte) error {
	h := j.fence()
	if h == nil {
		_, err := j.kv.Put(ctx, key, value)
		return err
	}
	for {
		_, err := j.js.PublishMsg(ctx, &nats.Msg{Subject: j.subject + key, Data: value, Header: h})
		if !isBusy(err) {
			return deposed(err)
		}
		select { // another fenced write is in flight: after it
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// publishAsync writes subject without waiting for the store: fenced on a
// store of one replica. A replicated store refuses two writes in flight
// that check the same subject (isBusy), and the journal's writes are
// pipelined: there they are not fenced, and what keeps a deposed leader
// from placing is that it steps its scheduler only while its leadership
// is confirmed (cluster's leader.go).
func (j *Journal) publishAsync(subject string, data []byte) (jetstream.PubAckFuture, error) {
	h := j.fence()
	if h == nil || !j.fenceRecords {
		return j.js.PublishAsync(subject, data)
	}
	return j.js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data, Header: h})
}

// isFenced reports whether err is the store refusing a write because the
// subject it checks has another last sequence than expected (a
// compare-and-set or a fence that failed).
func isFenced(err error) bool { return apiCode(err) == jetstream.JSErrCodeStreamWrongLastSequence }

// isBusy reports whether err is a replicated store refusing a write that
// checks a subject another write in flight checks too (it says nothing of
// the subject's sequence): written again, it is judged.
func isBusy(err error) bool {
	return apiCode(err) == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

func apiCode(err error) jetstream.ErrorCode {
	var js jetstream.JetStreamError
	if !errors.As(err, &js) || js.APIError() == nil {
		return 0
	}
	return js.APIError().ErrorCode
}

// deposed maps a fenced write's refusal to ErrDeposed.
func deposed(err error) error {
	if err != nil && isFenced(err) {
		return ErrDeposed
	}
	return err
}

// IsDeposed reports whether err (from a write of this journal, or passed
// to its OnError) says another control plane took the store over.
func IsDeposed(err error) bool { return errors.Is(err, ErrDeposed) || isFenced(err) }
