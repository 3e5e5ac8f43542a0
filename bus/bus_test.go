package bus_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/internal/testbus"
)

// TestCheckNamesTheFlag: a bad option is named by its flag.
func TestCheckNamesTheFlag(t *testing.T) {
	cases := map[string]bus.Options{
		"--nats":     {},
		"--creds":    {URLs: "nats://127.0.0.1:4222", Creds: "/no/such.creds"},
		"--tlscert":  {URLs: "nats://127.0.0.1:4222", TLSKey: "/etc/hostname"},
		"--password": {URLs: "nats://127.0.0.1:4222", Password: "x"},
	}
	for flag, o := range cases {
		if err := o.Check(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, flag)
		}
	}
}

// TestConnectFailsOverAndTimesOut: the first reachable URL of a list is
// used; with none, Connect says so within its timeout.
func TestConnectFailsOverAndTimesOut(t *testing.T) {
	ns, _ := testbus.Start(t)
	o := bus.Options{URLs: "nats://127.0.0.1:1," + ns.ClientURL()}
	nc, err := o.Connect("test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.ConnectedUrl() != ns.ClientURL() {
		t.Fatalf("connected to %s", nc.ConnectedUrl())
	}
	if _, err := (bus.Options{URLs: "nats://127.0.0.1:1"}).Connect("test", 300*time.Millisecond); err == nil ||
		!strings.Contains(err.Error(), "no server answered") {
		t.Fatalf("unreachable: %v", err)
	}
}
