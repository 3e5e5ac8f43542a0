package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/internal/testbus"
)

// ask sends a request and returns the reply's JSON, or the error.
func ask(nc *nats.Conn, subject string, body string) (obj, error) {
	msg, err := bus.Request(nc, subject, []byte(body), 5*time.Second)
	if err != nil {
		return nil, err
	}
	var out obj
	if err := json.Unmarshal(msg.Data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// mustAsk is ask that fails the test on an error or an error reply.
func mustAsk(t *testing.T, nc *nats.Conn, subject, body string) obj {
	t.Helper()
	rep, err := ask(nc, subject, body)
	if err != nil {
		t.Fatalf("%s %s: %v", subject, body, err)
	}
	if rep["error"] != nil {
		t.Fatalf("%s %s: %v", subject, body, rep["error"])
	}
	return rep
}

// wantDenied checks err is the server's refusal of a publish to subject.
func wantDenied(t *testing.T, who, subject string, err error) {
	t.Helper()
	var denied *bus.DeniedError
	if !errors.As(err, &denied) || denied.Subject != subject || !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("%s → %s: %v, want the server's permission violation", who, subject, err)
	}
	if !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), subject) {
		t.Fatalf("%s → %s: the error %q does not say what was refused", who, subject, err)
	}
}

// wantFieldError checks rep is an error reply naming field.
func wantFieldError(t *testing.T, what string, rep obj, err error, field, says string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	e, _ := rep["error"].(map[string]any)
	if e == nil || e["field"] != field || !strings.Contains(e["message"].(string), says) {
		t.Fatalf("%s: %v, want an error on %q saying %q", what, rep, field, says)
	}
}

// timeless is a snapshot without what moves with time alone: simulated
// time, and the progress, energy and power that running jobs accrue.
func timeless(snap obj) obj {
	var strip func(v any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				switch k {
				case "sim_time", "simtime", "progress_s", "run_s", "energy_j", "energy_kwh", "power_w", "rate", "slowdown":
					continue
				}
				out[k] = strip(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = strip(e)
			}
			return out
		}
		return v
	}
	return strip(snap).(obj)
}

// TestRolesAreEnforcedByTheServer is issue 9's check: real credentials
// per role on an embedded server with TLS; every refusal comes from the
// server or from the identity it vouches for, is reported clearly, and
// leaves the cluster as it was.
func TestRolesAreEnforcedByTheServer(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{})
	admin, observer, alice, bob, node0 := s.As(t, "admin"), s.As(t, "observer"), s.As(t, "alice"), s.As(t, "bob"), s.As(t, "node-0")

	// Each tenant has a job running; the tenant is the credentials', not
	// the body's.
	aliceJob := mustAsk(t, alice, "gpusched.job.submit", `{"name":"a-train","vram":"20GB","duration":"10h"}`)["job_id"].(string)
	bobJob := mustAsk(t, bob, "gpusched.job.submit", `{"name":"b-train","vram":"20GB","duration":"10h"}`)["job_id"].(string)
	if got := mustAsk(t, admin, "gpusched.job.get", `{"job_id":"`+aliceJob+`"}`)["tenant"]; got != "team-a" {
		t.Fatalf("alice's job has tenant %v, want team-a", got)
	}
	waitFor(t, "both jobs to run", 10*time.Second, func() bool {
		a := mustAsk(t, admin, "gpusched.job.get", `{"job_id":"`+aliceJob+`"}`)
		b := mustAsk(t, admin, "gpusched.job.get", `{"job_id":"`+bobJob+`"}`)
		return a["state"] == "running" && b["state"] == "running"
	})
	// The GPUs' own statuses (in the snapshot) follow their events: wait
	// until both report their job.
	var before obj
	waitFor(t, "the GPUs to report both jobs", 10*time.Second, func() bool {
		before = timeless(mustAsk(t, admin, "gpusched.cluster.snapshot", `{}`))
		n := 0
		for _, g := range before["gpus"].([]any) {
			jobs, _ := g.(obj)["jobs"].([]any)
			n += len(jobs)
		}
		return n == 2
	})

	// An observer may read events and snapshots, nothing else.
	if snap := mustAsk(t, observer, "gpusched.cluster.snapshot", `{}`); len(snap["running"].([]any)) != 2 {
		t.Fatalf("the observer's snapshot shows %d running jobs, want both tenants' 2", len(snap["running"].([]any)))
	}
	_, err := ask(observer, "gpusched.job.submit", `{"name":"x","vram":"1GB","duration":"1h"}`)
	wantDenied(t, "observer", "gpusched.job.submit", err)
	_, err = ask(observer, "gpusched.chaos.kill", `{"gpu":"gpu-3"}`)
	wantDenied(t, "observer", "gpusched.chaos.kill", err)
	_, err = ask(observer, "gpusched.sched.strategy", `{"policy":"spread"}`)
	wantDenied(t, "observer", "gpusched.sched.strategy", err)

	// A submitter cannot kill a GPU, switch the policy, or touch another
	// tenant's job; it sees only its own.
	_, err = ask(alice, "gpusched.chaos.kill", `{"gpu":"gpu-3"}`)
	wantDenied(t, "alice", "gpusched.chaos.kill", err)
	_, err = ask(alice, "gpusched.sched.strategy", `{"policy":"spread"}`)
	wantDenied(t, "alice", "gpusched.sched.strategy", err)
	rep, err := ask(alice, "gpusched.job.cancel", `{"job_id":"`+bobJob+`"}`)
	wantFieldError(t, "alice cancels bob's job", rep, err, "job_id", "no job "+bobJob+" among tenant team-a's jobs")
	rep, err = ask(alice, "gpusched.job.get", `{"job_id":"`+bobJob+`"}`)
	wantFieldError(t, "alice reads bob's job", rep, err, "job_id", "no job")
	rep, err = ask(alice, "gpusched.sched.explain", `{"job_id":"`+bobJob+`"}`)
	wantFieldError(t, "alice explains bob's job", rep, err, "job_id", "no job")
	rep, err = ask(alice, "gpusched.job.submit", `{"name":"x","tenant":"team-b","vram":"1GB","duration":"1h"}`)
	wantFieldError(t, "alice submits as team-b", rep, err, "tenant", `"team-b" is not yours`)
	rep, err = ask(alice, "gpusched.job.list", `{"tenant":"team-b"}`)
	wantFieldError(t, "alice lists team-b", rep, err, "tenant", "not yours")
	list := mustAsk(t, alice, "gpusched.job.list", `{}`)
	if jobs := list["jobs"].([]any); len(jobs) != 1 || jobs[0].(obj)["job_id"] != aliceJob {
		t.Fatalf("alice's job.list: %v, want her one job", list)
	}
	snap := mustAsk(t, alice, "gpusched.cluster.snapshot", `{}`)
	if running := snap["running"].([]any); len(running) != 1 || running[0].(obj)["job_id"] != aliceJob {
		t.Fatalf("alice's snapshot runs %v, want her one job", running)
	}
	for _, g := range snap["gpus"].([]any) {
		allocs, _ := g.(obj)["allocs"].([]any)
		for _, a := range allocs {
			if a.(obj)["job_id"] == bobJob {
				t.Fatalf("alice's snapshot shows bob's job on %v", g.(obj)["gpu"])
			}
		}
	}
	// A forged Nats-Request-Info is replaced by the server's.
	forged := nats.NewMsg("gpusched.job.cancel")
	forged.Header.Set(auth.RequestInfoHeader, `{"acc":"GPUSCHED"}`)
	forged.Data = []byte(`{"job_id":"` + bobJob + `"}`)
	msg, err := alice.RequestMsg(forged, 5*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), "among tenant team-a's jobs") {
		t.Fatalf("a forged request-info header: %v %s", err, msgData(msg))
	}

	// A node credential acts only as its own node.
	var gpuOfNode1 string
	for _, g := range before["gpus"].([]any) {
		if g.(obj)["node"] == "node-1" {
			gpuOfNode1 = g.(obj)["gpu"].(string)
			break
		}
	}
	denied := make(chan error, 4)
	node0Denials, err := s.Options("node-0").Connect("node-0-probe", 10*time.Second, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer node0Denials.Close()
	forgedDown := `{"data":{"gpu":"` + gpuOfNode1 + `","node":"node-1","model":"A100-80GB","incarnation":99,"vram_total":80000000000,"jobs":[]}}`
	node0Denials.Publish("gpusched.evt.gpu.node-1."+gpuOfNode1+".down", []byte(forgedDown))
	node0Denials.Flush()
	select {
	case err := <-denied:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "gpusched.evt.gpu.node-1.") {
			t.Fatalf("node-0 publishing node-1's GPU event: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("node-0 published node-1's GPU event and the server did not refuse it")
	}
	// Nor receive node-1's control messages (it could answer them as
	// node-1) ...
	probe := s.As(t, "node-0", nats.PermissionErrOnSubscribe(true))
	sub, err := probe.SubscribeSync("gpusched.gpu.node-1.>")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(5 * time.Second); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("node-0 subscribing to node-1's control subjects: %v, want a permission violation", err)
	}
	// ... nor speak for node-1's GPU under its own subject.
	node0.Publish("gpusched.evt.gpu.node-0."+gpuOfNode1+".down",
		[]byte(`{"source":"/gpu/node-0/x/1","data":{"gpu":"`+gpuOfNode1+`","node":"node-0","model":"A100-80GB","incarnation":99,"vram_total":80000000000,"jobs":[]}}`))
	// Its own heartbeat subject cannot speak for node-1 either: the
	// scheduler takes the node from the subject the server vouched for.
	node0.Publish("gpusched.evt.node.node-0.heartbeat", []byte(`{"data":{"node":"node-1","gpus":[{"gpu":"`+gpuOfNode1+`","incarnation":1,"alive":false}]}}`))
	node0.Flush()

	// Wrong password, unknown key: no connection at all.
	if _, err := (bus.Options{URLs: s.URL, User: "carol", Password: "wrong", TLSCA: s.TLS.CA, TLSCert: s.TLS.ClientCert, TLSKey: s.TLS.ClientKey}).
		Connect("carol", 10*time.Second); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("a wrong password: %v, want an authorization violation", err)
	}
	if nc, err := (bus.Options{URLs: s.URL, User: "carol", Password: livetest.SecurePassword, TLSCA: s.TLS.CA, TLSCert: s.TLS.ClientCert, TLSKey: s.TLS.ClientKey}).
		Connect("carol", 10*time.Second); err != nil {
		t.Fatalf("the right password: %v", err)
	} else {
		nc.Close()
	}
	stranger, _ := nkeys.CreateUser()
	seed, _ := stranger.Seed()
	strangerSeed := filepath.Join(s.Dir, "stranger.nk")
	os.WriteFile(strangerSeed, seed, 0o600)
	if _, err := (bus.Options{URLs: s.URL, NKey: strangerSeed, TLSCA: s.TLS.CA, TLSCert: s.TLS.ClientCert, TLSKey: s.TLS.ClientKey}).
		Connect("stranger", 10*time.Second); err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("an unknown key: %v, want an authorization violation", err)
	}

	// TLS: a client that does not trust the server's certificate, and a
	// client certificate the cluster's CA did not sign, are refused.
	other := auth.NewTLSSet(t.TempDir())
	if err := auth.WriteSelfSigned(other, []string{"127.0.0.1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	o := s.Options("admin")
	o.TLSCA = other.CA
	if _, err := o.Connect("untrusting", 10*time.Second); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client trusting another CA: %v, want a certificate error", err)
	}
	o = s.Options("admin")
	o.TLSCert, o.TLSKey = other.ClientCert, other.ClientKey
	if _, err := o.Connect("untrusted", 10*time.Second); err == nil || !strings.Contains(err.Error(), "tls") {
		t.Fatalf("a client certificate from another CA: %v, want a TLS refusal", err)
	}
	o = s.Options("admin")
	o.TLSCA, o.TLSCert, o.TLSKey = "", "", ""
	if _, err := o.Connect("plain", 5*time.Second); err == nil {
		t.Fatal("a client without TLS connected")
	}

	// Nothing changed: same jobs, same GPUs, same policy.
	mustAsk(t, admin, "gpusched.cluster.snapshot", `{}`) // after every refusal above was handled
	after := timeless(mustAsk(t, admin, "gpusched.cluster.snapshot", `{}`))
	if !reflect.DeepEqual(before, after) {
		b, _ := json.MarshalIndent(before, "", " ")
		a, _ := json.MarshalIndent(after, "", " ")
		t.Fatalf("the cluster changed:\nbefore %s\nafter %s", b, a)
	}
	// The admin may do what the others may not.
	if rep := mustAsk(t, admin, "gpusched.sched.strategy", `{"policy":"spread"}`); rep["policy"] != "spread" {
		t.Fatalf("admin's strategy switch: %v", rep)
	}
	mustAsk(t, admin, "gpusched.job.cancel", `{"job_id":"`+bobJob+`"}`)
}

func msgData(m *nats.Msg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}

// TestANodeRunsOnItsOwnCredentials: a GPU node joining over TCP with a
// node credential (what `cluster node --nkey` does) has every permission
// it needs — its control messages, its answers, heartbeats and leases, its
// events — and its GPU runs a job.
func TestANodeRunsOnItsOwnCredentials(t *testing.T) {
	s := livetest.SecureCluster(t, cluster.Config{})
	admin := s.As(t, "admin")
	hostConn, _ := joinFarNode(t, s, admin, 6*time.Second)
	id := mustAsk(t, admin, "gpusched.job.submit", `{"name":"far","vram":"20GB","duration":"10h","gpu":"far-gpu-0"}`)["job_id"].(string)
	waitFor(t, "the job to run on the node's GPU", 10*time.Second, func() bool {
		j := mustAsk(t, admin, "gpusched.job.get", `{"job_id":"`+id+`"}`)
		return j["state"] == "running" && j["node"] == "far-node"
	})
	if _, err := bus.Request(hostConn, "gpusched.job.submit", []byte(`{"name":"x","vram":"1GB","duration":"1h"}`), 5*time.Second); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("a node credential submitting a job: %v, want a permission violation", err)
	}
}

// TestAnExternalServerWithTheGeneratedConfig: a nats-server configured
// with the nats-auth.conf `cluster auth init` writes (included, as
// docs/SECURITY.md says) serves a control plane that signs in as the
// control user, and a tenant's job gets its tenant from the server.
func TestAnExternalServerWithTheGeneratedConfig(t *testing.T) {
	dir := t.TempDir()
	out, err := auth.Init(auth.InitOptions{Dir: dir, Prefix: "gpusched", EventStream: durable.EventStream("gpusched"),
		Tenants: []string{"team-a"}, Hosts: []string{"127.0.0.1"}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\njetstream { store_dir: \""+filepath.Join(dir, "js")+"\" }\ninclude nats-auth.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := testbus.StartConfig(t, conf)
	tlsOpts := func(seed string) bus.Options {
		return bus.Options{URLs: ns.ClientURL(), NKey: seed, TLSCA: out.TLS.CA, TLSCert: out.TLS.ClientCert, TLSKey: out.TLS.ClientKey}
	}
	f, err := auth.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(context.Background(), cluster.Config{Access: cluster.Access{Bus: tlsOpts(out.Seeds["control"]), Auth: f}, Timing: cluster.Timing{Speed: 1}, Durability: cluster.Durability{Store: durable.Memory}})
	if err != nil {
		t.Fatalf("a control plane on the external server: %v", err)
	}
	defer c.Stop()
	tenant, err := tlsOpts(out.Seeds["team-a"]).Connect("team-a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer tenant.Close()
	id := mustAsk(t, tenant, "gpusched.job.submit", `{"name":"a","vram":"20GB","duration":"1h"}`)["job_id"].(string)
	if j := mustAsk(t, tenant, "gpusched.job.get", `{"job_id":"`+id+`"}`); j["tenant"] != "team-a" {
		t.Fatalf("the tenant's job: %v", j)
	}
	_, err = ask(tenant, "gpusched.chaos.kill", `{"gpu":"gpu-0"}`)
	wantDenied(t, "team-a", "gpusched.chaos.kill", err)
}
