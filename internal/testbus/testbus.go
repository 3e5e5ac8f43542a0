package testbus

import (
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Start runs a NATS server on a random loopback port and returns a client
// connected to it; both stop when the test ends.
func Start(t testing.TB) (*server.Server, *nats.Conn) {
	t.Helper()
	return start(t, &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true})
}

// StartJetStream is Start with JetStream on, its store in a temporary
// directory.
func StartJetStream(t testing.TB) (*server.Server, *nats.Conn) {
	t.Helper()
	return start(t, &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir()})
}

func start(t testing.TB, opts *server.Options) (*server.Server, *nats.Conn) {
	t.Helper()
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats server: %v", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		ns.Shutdown()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns, nc
}

// WaitFor polls cond until it holds, failing the test after timeout.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !Await(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Await polls cond until it holds (true) or timeout passes (false), for a
// test that reports the failure itself, with what it found.
func Await(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// FreePort returns a loopback TCP port free at the time of the call (for
// a server's route or cluster port, which cannot be asked for as -1).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// StartConfig runs a NATS server from the configuration file at path (as
// nats-server -c would: includes are relative to it), quiet, stopped when
// the test ends.
func StartConfig(t testing.TB, path string) *server.Server {
	t.Helper()
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses %s: %v", path, err)
	}
	opts.NoLog, opts.NoSigs = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatalf("the nats-server of %s did not start", path)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}
