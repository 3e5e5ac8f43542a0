package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/model"
)

// TestBadFlagsSayWhatIsWrong: a bad flag is a message a person
// understands, naming the flag, never a crash.
// authDir is a roles directory `cluster auth init` wrote, for the test.
func authDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "auth")
	if err := authCommand([]string{"init", "--dir", dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBadFlagsSayWhatIsWrong(t *testing.T) {
	cases := map[string][]string{
		"--gpus":              {"--gpus", "3xTPU"},
		"--policy":            {"--policy", "lottery"},
		"--queue":             {"--queue", "lottery"},
		"--round":             {"--round", "-1m"},
		"--preempt":           {"--preempt", "lottery"},
		"--round-policy":      {"--round", "1m", "--round-policy", "optimus"},
		"--tenant-limits":     {"--tenant-limits", "team-a=gpus:lots"},
		"--vram-model":        {"--vram-model", "paged"},
		"--speed":             {"--speed", "0"},
		"--rate":              {"--rate", "-1"},
		"--listen":            {"--listen", "nowhere"},
		"--prefix":            {"--prefix", "a.b"},
		"--log-level":         {"--log-level", "loud", "--listen", "127.0.0.1:-1", "--rate", "0"},
		"--events-max-bytes":  {"--events-max-bytes", "lots"},
		"--events-max-age":    {"--events-max-age", "-1h"},
		"--replicas":          {"--replicas", "0"},
		"--no-journal":        {"--memory", "--no-journal"},
		"-oversubscribe":      {"--oversubscribe", "0.5"},
		"--tenant-rate":       {"--tenant-rate", "-1"},
		"--node-event-budget": {"--node-event-budget", "1MiB,16MiB"},
		"--creds":             {"--nats", "nats://127.0.0.1:1", "--creds", "/no/such/file.creds"},
		"--tlscert":           {"--nats", "nats://127.0.0.1:1", "--tlskey", "/etc/hostname"},
		"--tlskey":            {"--tlscert", "/etc/hostname", "--memory"},
		"--tlsca":             {"--tlscert", "/etc/hostname", "--tlskey", "/etc/hostname", "--tlsca", "/no/such/ca.pem", "--memory"},
		"--auth":              {"--auth", "/no/such/dir", "--memory"},
		"--training-data":     {"--training-data", "/no/such/dir", "--memory", "--rate", "0"},
		"--training-policy":   {"--training-data", "/no/such/dir", "--training-policy", "fifo", "--memory", "--rate", "0"},
		"--variability":       {"--variability", "/no/such/profile.csv", "--memory", "--rate", "0"},
		"--locality-penalty":  {"--locality-penalty", "0.5", "--memory", "--rate", "0"},
		// A profile of 2 GPUs for the demo's 8.
		"profile has 2 GPUs and the cluster 8": {"--variability", twoGPUProfile(t), "--memory", "--rate", "0"},
		// An open bus beyond loopback is refused, saying how to secure it.
		"cluster auth init": {"--listen", "0.0.0.0:0", "--memory", "--rate", "0"},
		// Credentials without TLS beyond loopback cross the network in clear.
		"without TLS": {"--listen", "0.0.0.0:0", "--auth", authDir(t), "--memory", "--rate", "0"},
	}
	for flag, args := range cases {
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("run %v: error %v, want one naming %s", args, err, flag)
		}
	}
}

// twoGPUProfile is a variability profile file of two GPUs.
func twoGPUProfile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "profile.csv")
	if err := os.WriteFile(path, []byte("GPU_ID,PerfVar_classA\n0,0.95\n1,1.05\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuthCommand: `cluster auth init` writes a set `--auth` accepts,
// refuses to write over it, and names a bad flag; `cluster auth conf`
// prints the server configuration.
func TestAuthCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	if err := authCommand([]string{"init", "--dir", dir, "--tenants", "team-a", "--nodes", "box1", "--hosts", "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"users.yaml", "admin.nk", "observer.nk", "control.nk", "team-a.nk", "box1.nk", "tls/ca.pem", "tls/server-cert.pem", "tls/client-key.pem", "nats-auth.conf"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("auth init did not write %s: %v", f, err)
		}
	}
	if err := authCommand([]string{"init", "--dir", dir}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a second init: %v, want a refusal naming --force", err)
	}
	for flag, args := range map[string][]string{
		"--tenants": {"init", "--dir", t.TempDir(), "--tenants", "a.b"},
		"--prefix":  {"init", "--dir", t.TempDir(), "--prefix", "a b"},
		"--hosts":   {"init", "--dir", t.TempDir(), "--hosts", ","},
		"init":      {"rotate"},
	} {
		if err := authCommand(args); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("auth %v: %v, want an error naming %s", args, err, flag)
		}
	}
	if err := authConf([]string{"--auth", dir}); err != nil {
		t.Errorf("auth conf: %v", err)
	}
}

// TestNodeFlagsSayWhatIsWrong: `cluster node`'s bad flags are named.
func TestNodeFlagsSayWhatIsWrong(t *testing.T) {
	cases := map[string][]string{
		"--name":      {"--gpus", "8xA100-80GB"},
		"--gpus":      {"--name", "rack2-node7", "--gpus", "8xTPU"},
		"--heartbeat": {"--name", "n", "--lease", "1s", "--heartbeat", "900ms"},
		"--nats":      {"--name", "n", "--nats", ""},
	}
	for flag, args := range cases {
		err := nodeCommand(args)
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("node %v: error %v, want one naming %s", args, err, flag)
		}
	}
	spec, err := nodeSpec("rack2-node7", "8xA100-80GB")
	if err != nil || len(spec.GPUs) != 8 || spec.GPUs[7].ID != "rack2-node7-gpu-7" || spec.ID != "rack2-node7" {
		t.Fatalf("nodeSpec: %+v, %v", spec, err)
	}
}

// TestSubmitFlagsFillTheSubmission: every flag of `cluster submit` lands
// in its field, a flag not given leaves its field out (the scheduler's
// default applies: util is gpu_milli/10 when only --gpu-milli is given),
// and a bad size is named.
func TestSubmitFlagsFillTheSubmission(t *testing.T) {
	_, _, body, err := submitRequest([]string{"--name", "etl", "--vram", "4GB", "--duration", "10m", "--cpu", "30", "--memory", "64GB",
		"--node", "node-1", "--gpu-milli", "300", "--gpus", "0", "--job-id", "j-1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(body)
	var got map[string]any
	json.Unmarshal(b, &got)
	want := map[string]any{"job_id": "j-1", "name": "etl", "priority": "medium", "gpus": 0.0, "vram": "4GB", "gpu_milli": 300.0, "duration": "10m",
		"preemptible": true, "cpu": 30.0, "memory": "64GB", "node": "node-1"}
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("%s: %v, want %v (submission %s)", k, got[k], v, b)
		}
	}
	if _, ok := got["util"]; ok {
		t.Errorf("util sent though --util was not given: %s", b)
	}
	_, _, body, err = submitRequest([]string{"--name", "x", "--vram", "4GB", "--duration", "1m"})
	if err != nil || body.CPU != nil || body.Memory != nil || body.Util != nil || body.GPUMilli != nil || body.JobID == "" {
		t.Fatalf("a submission with no host flags: %+v, %v; want cpu, memory, util and gpu_milli left out and a job id drawn", body, err)
	}
	_, _, body, err = submitRequest([]string{"--name", "bert", "--training-app", "bert", "--training-batch", "384", "--training-replicas", "4"})
	if err != nil || body.Training == nil || *body.Training != (model.Training{App: "bert", Batch: 384, Replicas: 4}) || body.GPUs != nil || body.VRAM != nil {
		t.Fatalf("a training submission: %+v (training %+v), %v; want training bert/384/4 and no gpus or vram", body, body.Training, err)
	}
	for flag, args := range map[string][]string{
		"--training-app": {"--name", "x", "--training-batch", "384"},
		"--memory":       {"--name", "x", "--vram", "4GB", "--duration", "1m", "--memory", "lots"},
		"--vram":         {"--name", "x", "--vram", "4 gigs", "--duration", "1m"},
		"--priority":     {"--name", "x", "--vram", "4GB", "--duration", "1m", "--priority", "urgent"},
		"extra":          {"--name", "x", "--vram", "4GB", "--duration", "1m", "extra"},
	} {
		if _, _, _, err := submitRequest(args); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("submit %v: error %v, want one naming %s", args, err, flag)
		}
	}
}

// TestClientCommands drives a real cluster through the CLI's request path.
func TestClientCommands(t *testing.T) {
	c, err := cluster.Start(context.Background(), cluster.Config{Access: cluster.Access{Listen: "127.0.0.1:-1"}, Timing: cluster.Timing{Speed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	var out bytes.Buffer
	body := map[string]any{"name": "cli-job", "vram": "12GiB", "util": 30, "duration": "20m"}
	if err := request(&bus.Options{URLs: c.URL()}, "gpusched.job.submit", body, &out); err != nil {
		t.Fatal(err)
	}
	var rep struct{ JobID, State string }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.State != "placed" {
		t.Fatalf("submit printed %s", out.String())
	}
	out.Reset()
	err = request(&bus.Options{URLs: c.URL()}, "gpusched.job.submit", map[string]any{"name": "x", "vram": "-1GB", "duration": "1m"}, &out)
	if err == nil || !strings.Contains(err.Error(), "vram") {
		t.Fatalf("bad submit: %v", err)
	}
	if err := chaosCommand([]string{"kill", "gpu-3", "--nats", c.URL()}); err != nil {
		t.Fatalf("chaos kill gpu-3: %v", err)
	}
	if err := chaosCommand([]string{"kill", "gpu-42", "--nats", c.URL()}); err == nil || !strings.Contains(err.Error(), "gpu-42") {
		t.Fatalf("chaos kill of an unknown GPU: %v", err)
	}
	if err := chaosCommand([]string{"reboot", "gpu-3"}); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Fatalf("an unknown chaos action: %v", err)
	}
	if err := chaosCommand([]string{"hang", "gpu-3"}); err == nil || !strings.Contains(err.Error(), "--duration") {
		t.Fatalf("a hang without a duration: %v", err)
	}
	if err := chaosCommand([]string{"drop", "gpu-3", "--drop", "lots"}); err == nil || !strings.Contains(err.Error(), "--drop") {
		t.Fatalf("a drop that is not a fraction: %v", err)
	}
	if err := chaosCommand([]string{"delay", "gpu-4", "--delay", "10ms", "--duration", "1s", "--nats", c.URL()}); err != nil {
		t.Fatalf("chaos delay: %v", err)
	}
	if err := request(&bus.Options{URLs: "nats://127.0.0.1:1"}, "gpusched.job.list", map[string]any{}, &out); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("unreachable cluster: %v", err)
	}
}

// TestReplayFlagsSayWhatIsWrong: replay's bad flags and files are named.
func TestReplayFlagsSayWhatIsWrong(t *testing.T) {
	dir := t.TempDir()
	nodes := dir + "/nodes.csv"
	os.WriteFile(nodes, []byte("sn,cpu_milli,memory_mib,gpu,model\nn0,8000,1024,1,T4\n"), 0o644)
	bad := dir + "/pods.csv"
	os.WriteFile(bad, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1,1,500\np1,oops,1,1,500\n"), 0o644)
	cases := map[string][]string{
		"--seeds":                      {"--nodes", nodes, "--pods", bad, "--seeds", "x-y"},
		"--policy":                     {"--nodes", nodes, "--pods", bad, "--policy", "lottery"},
		"--inflate":                    {"--nodes", nodes, "--pods", bad, "--inflate", "0"},
		"--nodes":                      {"--nodes", dir + "/missing.csv", "--pods", bad},
		"pods.csv:3: column cpu_milli": {"--nodes", nodes, "--pods", bad, "--quiet"},
		"--compare":                    {"--nodes", nodes, "--pods", bad, "--compare", dir},
	}
	for want, args := range cases {
		err := replayCommand(args)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("replay %v: error %v, want one naming %s", args, err, want)
		}
	}
	// A good small trace runs offline and writes the curve.
	good := dir + "/openb_pod_list_tiny.csv"
	os.WriteFile(good, []byte("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1,1,500\np1,1000,1,1,700\np2,1000,1,0,0\n"), 0o644)
	out := dir + "/curve.csv"
	if err := replayCommand([]string{"--nodes", nodes, "--pods", good, "--offline", "--quiet", "--out", out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(b), "arrived_pct,alloc_pct,frag_amount_pct,frag_ratio_pct\n") || strings.Count(string(b), "\n") != 132 {
		t.Fatalf("curve file: %v\n%s", err, b)
	}
}

// TestBenchFlagsSayWhatIsWrong: `cluster bench` refuses arguments and
// unknown flags with a message naming them.
func TestBenchFlagsSayWhatIsWrong(t *testing.T) {
	if err := benchCommand([]string{"everything"}); err == nil || !strings.Contains(err.Error(), "everything") {
		t.Errorf("bench everything: error %v, want one naming the argument", err)
	}
	if err := benchCommand([]string{"--fast"}); err == nil || !strings.Contains(err.Error(), "fast") {
		t.Errorf("bench --fast: error %v, want one naming the flag", err)
	}
}

// TestHelpListsEveryCommandAndEachHasAnExample: cluster --help lists the
// commands and exits 0; each command's -h has a usage line, an example
// and its flags, and exits 0.
func TestHelpListsEveryCommandAndEachHasAnExample(t *testing.T) {
	var out bytes.Buffer
	if code := runMain([]string{"--help"}, &out); code != 0 {
		t.Fatalf("cluster --help exited %d", code)
	}
	for _, c := range []string{"cluster [run]", "cluster node", "cluster submit", "cluster get", "cluster list", "cluster cancel",
		"cluster explain", "cluster strategy", "cluster snapshot", "cluster chaos", "cluster replay", "cluster compare",
		"cluster auth init", "cluster bench"} {
		if !strings.Contains(out.String(), "\n  "+c) {
			t.Errorf("cluster --help does not list %q:\n%s", c, out.String())
		}
	}
	for name := range helps {
		fs := newFlags(name)
		var help bytes.Buffer
		fs.SetOutput(&help)
		fs.Usage()
		if !strings.HasPrefix(help.String(), "usage: cluster ") || !strings.Contains(help.String(), "\nexample:\n  cluster ") {
			t.Errorf("%s -h:\n%s\nwant a usage line and an example", name, help.String())
		}
	}
	for _, args := range [][]string{{"submit", "-h"}, {"run", "-h"}, {"chaos", "hang", "-h"}, {"chaos", "-h"}, {"auth", "init", "-h"}} {
		if code := runMain(args, io.Discard); code != 0 {
			t.Errorf("cluster %v exited %d, want 0", args, code)
		}
	}
	// replay -h names its other modes, each with the flag that selects it.
	for _, want := range []string{"--pollux DIR", "--load L", "--workload N", "--gavel DIR", "--timed"} {
		if !strings.Contains(replayUsageHead, want) {
			t.Errorf("cluster replay -h does not name %s:\n%s", want, replayUsageHead)
		}
	}
	// The flag package takes a back-quoted word of a usage string as the
	// flag's argument name ("-no-gpus cluster node"): no flag's usage
	// string here holds one.
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 3 {
				return true
			}
			if lit, ok := call.Args[len(call.Args)-1].(*ast.BasicLit); ok && lit.Kind == token.STRING &&
				strings.HasPrefix(lit.Value, `"`) && strings.Contains(lit.Value, "`") {
				t.Errorf("%s: a flag's usage string holds a back quote: %s", f, lit.Value)
			}
			return true
		})
	}
}

// TestClientCommandsSpeakInNames (issue 45 item 3): get, explain, list
// and snapshot print sentences and tables with names, GB and times (JSON
// with --json); a job is named by its id or by its name where unique, an
// ambiguous or unknown one is refused saying so, and flags may come after
// the job.
func TestClientCommandsSpeakInNames(t *testing.T) {
	c, err := cluster.Start(context.Background(), cluster.Config{Access: cluster.Access{Listen: "127.0.0.1:-1"}, Timing: cluster.Timing{Speed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, name := range []string{"cli-a", "dup", "dup"} {
		var out bytes.Buffer
		if err := request(&bus.Options{URLs: c.URL()}, "gpusched.job.submit", map[string]any{"name": name, "vram": "12GB", "util": 30, "duration": "20m"}, &out); err != nil {
			t.Fatal(err)
		}
	}
	get := captureStdout(t, func() error { return jobCommand("get", []string{"cli-a", "--nats", c.URL()}) })
	if !strings.Contains(get, "cli-a (id ") || !strings.Contains(get, "12GB VRAM") || !strings.Contains(get, "history (simulated time):") {
		t.Errorf("cluster get cli-a printed:\n%s", get)
	}
	why := captureStdout(t, func() error { return jobCommand("explain", []string{"cli-a", "--nats", c.URL()}) })
	if !strings.Contains(why, "cli-a was placed by binpack on gpu-") || !strings.Contains(why, "places weighed") {
		t.Errorf("cluster explain cli-a printed:\n%s", why)
	}
	js := captureStdout(t, func() error { return jobCommand("get", []string{"--json", "cli-a", "--nats", c.URL()}) })
	var j struct {
		Name string `json:"name"`
		VRAM int64  `json:"vram"`
	}
	if err := json.Unmarshal([]byte(js), &j); err != nil || j.Name != "cli-a" || j.VRAM != 12<<30 {
		t.Errorf("cluster get --json printed %s (%v)", js, err)
	}
	tbl := captureStdout(t, func() error { return list([]string{"--nats", c.URL()}) })
	if !strings.Contains(tbl, "NAME") || !strings.Contains(tbl, "cli-a") || !strings.Contains(tbl, "12GB") || !strings.Contains(tbl, "3 jobs on page 0") {
		t.Errorf("cluster list printed:\n%s", tbl)
	}
	snap := captureStdout(t, func() error { return snapshot([]string{"--nats", c.URL()}) })
	if !strings.Contains(snap, "gpusched · policy binpack") || !strings.Contains(snap, "RUNNING JOBS") {
		t.Errorf("cluster snapshot printed:\n%s", snap)
	}
	for arg, want := range map[string]string{"dup": "2 jobs are named", "nobody": "no job has the id or the name"} {
		if err := jobCommand("get", []string{arg, "--nats", c.URL()}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cluster get %s: %v, want an error saying %q", arg, err, want)
		}
	}
}

// TestARestartedNodeStartsAboveItsLastIncarnation (issue 42 item 6): a
// node process started later starts at a higher incarnation than any an
// earlier process of the same name could have reached by re-fences (one
// each), so the scheduler takes its GPUs at once.
func TestARestartedNodeStartsAboveItsLastIncarnation(t *testing.T) {
	first := nodeIncarnationBase(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	// A thousand re-fences of the first process, then a restart a second later.
	if later := nodeIncarnationBase(time.Date(2026, 12, 6, 8, 0, 1, 0, time.UTC)); later < first+1000 {
		t.Errorf("restarted a second later at %d, below %d (the first process after 1,000 re-fences)", later, first+1000)
	}
	if got := nodeIncarnationBase(time.Date(2019, 1, 1, 0, 0, 0, 0, time.UTC)); got != 1 {
		t.Errorf("a clock before 2020 starts at %d, want 1", got)
	}
}
