package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/internal/livetest"
)

// TestMain fails the tests if the cluster they start leaves a goroutine.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// observerBinary builds the observer command once for the tests that run it
// as a user would.
func observerBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "observer")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// run runs the observer with args and returns its stdout, stderr and exit
// status.
func run(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("observer %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), 0
}

// TestObserverAgainstARunningCluster runs the built observer against a real
// cluster: the text view shows its GPUs, the live checker finds nothing
// wrong and exits 0; a command or file it does not know is a clear error.
func TestObserverAgainstARunningCluster(t *testing.T) {
	bin := observerBinary(t)
	c, _ := livetest.Cluster(t, cluster.Config{Timing: cluster.Timing{Speed: 60}})
	out, errOut, code := run(t, bin, "text", "--once", "--nats", c.URL())
	if code != 0 || !strings.Contains(out, "gpu-0") || !strings.Contains(out, "gpu-7") {
		t.Fatalf("text --once: exit %d, stdout:\n%s\nstderr:\n%s\nwant the reference cluster's gpu-0 to gpu-7", code, out, errOut)
	}
	out, errOut, code = run(t, bin, "check", "--for", "2s", "--nats", c.URL())
	if code != 0 || !strings.Contains(out+errOut, "violations") {
		t.Fatalf("check --for 2s: exit %d, stdout:\n%s\nstderr:\n%s\nwant a summary and exit 0", code, out, errOut)
	}
	_, errOut, code = run(t, bin, "nonsense")
	if code != 2 || !strings.Contains(errOut, `unknown command "nonsense"`) {
		t.Fatalf("an unknown command: exit %d, stderr:\n%s", code, errOut)
	}
	missing := filepath.Join(t.TempDir(), "no-such-run.jsonl")
	_, errOut, code = run(t, bin, "report", missing, "--out", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "no-such-run.jsonl") {
		t.Fatalf("a report of a missing run: exit %d, stderr:\n%s\nwant an error naming the file", code, errOut)
	}
}
