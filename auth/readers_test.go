package auth

import (
	"strings"
	"testing"
)

// TestReadersHoldEachAccountToItsBound: an account's consumers past the
// bound are refused while another account's are not; a deleted (or
// vanished) consumer makes room; a push consumer is refused whatever the
// count; a consumer's update is not a second one.
func TestReadersHoldEachAccountToItsBound(t *testing.T) {
	r := NewReaders(2)
	for _, c := range []string{"a1", "a2"} {
		if why := r.Created("OBSERVER_a", c, false); why != "" {
			t.Fatalf("%s refused: %s", c, why)
		}
	}
	if why := r.Created("OBSERVER_a", "a1", false); why != "" {
		t.Fatalf("an update of a1 refused: %s", why)
	}
	if why := r.Created("OBSERVER_a", "a3", false); !strings.Contains(why, "bound") {
		t.Fatalf("a third consumer: %q, want refused at the bound", why)
	}
	if why := r.Created("ADMIN_b", "b1", false); why != "" || r.Held("ADMIN_b") != 1 {
		t.Fatalf("another account's first consumer: %q, held %d", why, r.Held("ADMIN_b"))
	}
	r.Deleted("a1")
	if why := r.Created("OBSERVER_a", "a3", false); why != "" {
		t.Fatalf("after a deletion: %q", why)
	}
	r.Only(map[string]bool{"a3": true, "b1": true})
	if r.Held("OBSERVER_a") != 1 {
		t.Fatalf("after a2 vanished the account holds %d, want 1", r.Held("OBSERVER_a"))
	}
	if why := r.Created("ADMIN_b", "p", true); !strings.Contains(why, "push") || r.Held("ADMIN_b") != 1 {
		t.Fatalf("a push consumer: %q, held %d", why, r.Held("ADMIN_b"))
	}
}
