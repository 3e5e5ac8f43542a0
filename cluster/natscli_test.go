package cluster_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/cluster"
)

// natsCLI finds the stock nats CLI (natscli), which .ci/run installs.
func natsCLI(t *testing.T) string {
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		if p := filepath.Join(home, "go", "bin", "nats"); fileExists(p) {
			return p
		}
	}
	t.Skip("the stock nats CLI is not installed: go install github.com/nats-io/natscli/nats@v0.5.0 (.ci/run does)")
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestStockNatsCLI drives the cluster with the stock nats CLI, exactly as
// the README shows: submit, read and switch the policy, snapshot.
func TestStockNatsCLI(t *testing.T) {
	bin := natsCLI(t)
	c, _ := startCluster(t, cluster.Config{})
	natsReq := func(subject, body string) map[string]any {
		t.Helper()
		out, err := exec.Command(bin, "--server", c.URL(), "req", subject, body, "--raw").Output()
		if err != nil {
			t.Fatalf("nats req %s %s: %v\n%s", subject, body, err, out)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &rep); err != nil {
			t.Fatalf("nats req %s: reply %q is not JSON", subject, out)
		}
		return rep
	}
	rep := natsReq("gpusched.job.submit", `{"name":"my-eval","priority":"medium","gpus":1,"vram":"12GiB","util":30,"duration":"20m"}`)
	if rep["state"] != "placed" || rep["job_id"] == "" {
		t.Fatalf("submit: %v", rep)
	}
	if rep := natsReq("gpusched.job.submit", `{"name":"x","vram":"12GiB","duration":"20m","priority":"urgent"}`); rep["error"].(map[string]any)["field"] != "priority" {
		t.Fatalf("bad priority: %v", rep)
	}
	if rep := natsReq("gpusched.sched.strategy", `{}`); rep["policy"] != "binpack" {
		t.Fatalf("strategy read: %v", rep)
	}
	if rep := natsReq("gpusched.sched.strategy", `{"policy":"spread"}`); rep["policy"] != "spread" {
		t.Fatalf("strategy set: %v", rep)
	}
	if rep := natsReq("gpusched.cluster.snapshot", `{"page":0}`); rep["policy"] != "spread" || len(rep["gpus"].([]any)) != 8 {
		t.Fatalf("snapshot: %v", rep)
	}
}
