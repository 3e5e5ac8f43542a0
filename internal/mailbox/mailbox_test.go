package mailbox

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestMailboxKeepsOrderAndNothingWhenEmpty checks the queue hands out
// messages in order, one per wake, and lets go of its array once drained.
func TestMailboxKeepsOrderAndNothingWhenEmpty(t *testing.T) {
	b := New()
	for i := 0; i < 100; i++ {
		b.Put(&nats.Msg{Subject: strconv.Itoa(i)})
	}
	for i := 0; i < 100; i++ {
		select {
		case <-b.Wake:
		default:
			t.Fatalf("no wake before message %d", i)
		}
		m, ok := b.Take()
		if !ok || m.Subject != strconv.Itoa(i) {
			t.Fatalf("message %d: got %v %v", i, m, ok)
		}
	}
	if _, ok := b.Take(); ok {
		t.Fatal("a message after the last")
	}
	if b.msgs != nil {
		t.Fatalf("a drained mailbox keeps %d slots", cap(b.msgs))
	}
}
