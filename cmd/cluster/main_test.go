package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/cluster"
)

// TestBadFlagsSayWhatIsWrong: a bad flag is a message a person
// understands, naming the flag, never a crash.
func TestBadFlagsSayWhatIsWrong(t *testing.T) {
	cases := map[string][]string{
		"--gpus":       {"--gpus", "3xTPU"},
		"--policy":     {"--policy", "lottery"},
		"--vram-model": {"--vram-model", "paged"},
		"--speed":      {"--speed", "0"},
		"--rate":       {"--rate", "-1"},
		"--listen":     {"--listen", "nowhere"},
		"--prefix":     {"--prefix", "a.b"},
		"--log-level":  {"--log-level", "loud", "--listen", "127.0.0.1:-1", "--rate", "0"},
	}
	for flag, args := range cases {
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("run %v: error %v, want one naming %s", args, err, flag)
		}
	}
}

// TestClientCommands drives a real cluster through the CLI's request path.
func TestClientCommands(t *testing.T) {
	c, err := cluster.Start(context.Background(), cluster.Config{Listen: "127.0.0.1:-1", Speed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var out bytes.Buffer
	body := map[string]any{"name": "cli-job", "vram": "12GiB", "util": 30, "duration": "20m"}
	if err := request(c.URL(), "gpusched.job.submit", body, &out); err != nil {
		t.Fatal(err)
	}
	var rep struct{ JobID, State string }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.State != "placed" {
		t.Fatalf("submit printed %s", out.String())
	}
	out.Reset()
	err = request(c.URL(), "gpusched.job.submit", map[string]any{"name": "x", "vram": "-1GB", "duration": "1m"}, &out)
	if err == nil || !strings.Contains(err.Error(), "vram") {
		t.Fatalf("bad submit: %v", err)
	}
	if err := request("nats://127.0.0.1:1", "gpusched.job.list", map[string]any{}, &out); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("unreachable cluster: %v", err)
	}
}
