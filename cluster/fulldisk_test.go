//go:build linux

package cluster_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
)

// TestAFullDiskIsRefusedAtOnceAndRecoveredFrom (issue 43, item 1): the
// cluster's store on a real 8 MiB tmpfs. With the disk filled, every
// submission is refused on "store" within a second (not after the
// journal's 5-second acknowledgement timeout), and none of them runs;
// once space is freed, without a restart, a submission is accepted and
// runs again within 10 s, the event stream — which failed writes while
// the disk was full, and NATS's file store takes that as final until the
// stream is opened again — stores events again, and the jobs accepted
// before the disk filled are all still known. The journal's complaints are said once per state
// change, not per job and retry.
func TestAFullDiskIsRefusedAtOnceAndRecoveredFrom(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("a real full disk needs a tmpfs of its own, and mounting one needs root (CAP_SYS_ADMIN): %v", err)
	}
	// Registered first, so it runs last: after the cluster has stopped.
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	logs, seen := observer.New(zap.InfoLevel)
	_, nc := startCluster(t, cluster.Config{
		Logger: zap.New(logs),
		Timing: cluster.Timing{Speed: 60},
		Durability: cluster.Durability{
			Store:   durable.File,
			DataDir: filepath.Join(mnt, "data"),
			Durable: durable.Options{EventsMaxBytes: 2 << 20},
		},
	})
	var before []string
	for range 3 {
		before = append(before, submit(t, nc, `{"name":"before","vram":"4GB","duration":"10h"}`))
	}

	// Fill the disk.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break // ENOSPC
		}
	}
	f.Close()
	t.Cleanup(func() {
		if t.Failed() {
			for _, e := range seen.All() {
				t.Log(e.Time.Format("15:04:05.000"), e.Message, e.ContextMap())
			}
		}
	})
	refusedWithin := func() (time.Duration, obj) {
		start := time.Now()
		rep := req(t, nc, "gpusched.job.submit", `{"name":"while-full","vram":"4GB","duration":"10h"}`)
		return time.Since(start), rep
	}
	// The watch sees the full disk within its period (a submission in
	// between still waits for the store's timeout); from then on every
	// submission is refused at once.
	waitFor(t, "the scheduler to hear the store is down", 10*time.Second, func() bool {
		return seen.FilterMessageSnippet("store cannot take writes").Len() > 0
	})
	for range 10 {
		took, rep := refusedWithin()
		e, _ := rep["error"].(map[string]any)
		if e == nil || e["field"] != "store" {
			t.Fatalf("a submission on a full disk: %v, want refused on store", rep)
		}
		if took > time.Second {
			t.Fatalf("refused after %s, want within a second", took)
		}
	}

	// The event stream fails a write on the full disk (an event of 256
	// KiB, published as the control plane would): NATS's file store takes
	// that as final until the stream is opened again.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 256<<10)
	if _, err := js.Publish(t.Context(), "gpusched.evt.sched.test-big", big); err == nil {
		t.Fatal("a 256 KiB event was stored on the full disk")
	}
	// Free the space: accepted again within 10 s, without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	var after string
	waitFor(t, "a submission accepted after the space returned", 15*time.Second, func() bool {
		rep := req(t, nc, "gpusched.job.submit", `{"name":"after","vram":"4GB","duration":"10h"}`)
		if rep["error"] != nil {
			return false
		}
		after = rep["job_id"].(string)
		return true
	})
	if took := time.Since(freed); took > 10*time.Second {
		t.Errorf("accepted again %s after the space returned, want within 10 s", took.Round(time.Millisecond))
	}
	waitFor(t, "the job accepted after the space returned to run", 10*time.Second, func() bool {
		return getJob(t, nc, after)["state"] == "running"
	})
	for _, id := range before {
		if st := getJob(t, nc, id)["state"]; st != "running" {
			t.Errorf("job %s accepted before the disk filled is %v", id, st)
		}
	}
	waitFor(t, "the event stream to store events again", 10*time.Second, func() bool {
		_, err := js.Publish(t.Context(), "gpusched.evt.sched.test-big", big)
		return err == nil
	})
	var listed struct {
		Jobs []struct {
			Name string `json:"name"`
		} `json:"jobs"`
	}
	raw, _ := json.Marshal(req(t, nc, "gpusched.job.list", `{}`))
	json.Unmarshal(raw, &listed)
	for _, j := range listed.Jobs {
		if j.Name == "while-full" {
			t.Fatalf("a job refused on the full disk is listed: %s", raw)
		}
	}
	// Said once per state change: at most a handful of journal lines.
	journal := 0
	for _, e := range seen.All() {
		if strings.Contains(e.Message, "journal") || strings.Contains(e.Message, "store") {
			journal++
		}
	}
	if journal > 12 {
		for _, e := range seen.All() {
			t.Log(e.Message)
		}
		t.Fatalf("%d log lines about the journal and the store: said per job or per retry", journal)
	}
	t.Logf("%d log lines about the journal and the store", journal)
}
