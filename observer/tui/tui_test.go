package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/internal/livetest"
	"github.com/gpusched/gpusched/internal/testbus"
	"github.com/gpusched/gpusched/observer"
)

// keys feeds keys to the model as a terminal would, running the commands
// they return (requests to the cluster) and feeding their results back.
func keys(t *testing.T, m *Model, ks ...tea.KeyMsg) {
	t.Helper()
	for _, k := range ks {
		_, cmd := m.Update(k)
		if cmd == nil {
			continue
		}
		if msg := cmd(); msg != nil {
			if _, ok := msg.(tea.QuitMsg); ok {
				continue
			}
			m.Update(msg)
		}
	}
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// TestKeysDriveTheCluster presses the dashboard's keys against a live
// cluster: p switches the policy, a submits a typed job (which then shows
// in the running table), k kills a GPU, f shows the VRAM layout and space
// freezes the picture.
func TestKeysDriveTheCluster(t *testing.T) {
	_, nc := livetest.Cluster(t, cluster.Config{Timing: cluster.Timing{Speed: 1}})
	w := livetest.Watcher(t, nc, observer.WatchOptions{Interval: 20 * time.Millisecond})
	ctl := observer.NewControl(nc, events.NewSubjects(""))
	m := New(w, ctl)
	m.Update(tea.WindowSizeMsg{Width: 132, Height: 48})
	testbus.WaitFor(t, "the first snapshot", 5*time.Second, func() bool {
		m.Update(tickMsg(time.Now()))
		return m.state.Snapshot != nil
	})

	if before, err := ctl.Strategy(""); err != nil || before.Policy != "binpack" {
		t.Fatalf("the cluster starts under %v (%v), want binpack", before.Policy, err)
	}
	keys(t, m, runes("p"))
	want := "spread" // the demo's second policy follows binpack (policyCycle)
	if got, _ := ctl.Strategy(""); got.Policy != want || !strings.Contains(m.view.Status, "binpack → "+want) {
		t.Fatalf("after p: policy %s, status %q; want %s", got.Policy, m.view.Status, want)
	}

	for _, k := range []string{"s", "b"} {
		keys(t, m, runes(k))
		want := map[string]string{"s": "spread", "b": "binpack"}[k]
		if got, _ := ctl.Strategy(""); got.Policy != want || !strings.HasSuffix(m.view.Status, "→ "+want) {
			t.Fatalf("after %s: policy %s, status %q; want %s", k, got.Policy, m.view.Status, want)
		}
	}

	keys(t, m, runes("a"))
	for _, r := range "name=typed-job vram=12GB util=40 duration=2h" {
		if r == ' ' {
			keys(t, m, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
		} else {
			keys(t, m, runes(string(r)))
		}
	}
	if !strings.Contains(m.View(), "add job> name=typed-job vram=12GB") {
		t.Fatalf("the prompt does not show what was typed:\n%s", m.View())
	}
	keys(t, m, tea.KeyMsg{Type: tea.KeyEnter})
	if !strings.Contains(m.view.Status, "placed") {
		t.Fatalf("after enter: status %q, want the job placed", m.view.Status)
	}
	gpu := ""
	testbus.WaitFor(t, "the typed job in the running table", 5*time.Second, func() bool {
		m.Update(tickMsg(time.Now()))
		for _, j := range m.state.Snapshot.Running {
			if j.Name == "typed-job" {
				gpu = j.GPUIDs[0]
			}
		}
		return gpu != "" && strings.Contains(m.View(), "typed-job")
	})

	keys(t, m, runes("f"))
	if !m.view.Frag || !strings.Contains(m.View(), "·") {
		t.Fatalf("f did not show the VRAM layout with its free blocks")
	}
	keys(t, m, runes(" "))
	frozen := m.state.Updated
	keys(t, m, runes("k"))
	if !strings.Contains(m.View(), "kill GPU> █") {
		t.Fatalf("the kill prompt should start empty:\n%s", m.View())
	}
	keys(t, m, runes(strings.TrimPrefix(gpu, "gpu-")), tea.KeyMsg{Type: tea.KeyEnter})
	if !strings.Contains(m.view.Status, gpu+" killed: 1 job(s) lost") {
		t.Fatalf("after k %s: status %q", gpu, m.view.Status)
	}
	testbus.WaitFor(t, "the watcher to take a newer snapshot", 5*time.Second, func() bool {
		return w.State().Updated.After(frozen)
	})
	m.Update(tickMsg(time.Now()))
	if !m.state.Updated.Equal(frozen) || !strings.Contains(m.View(), "PAUSED") {
		t.Fatal("a paused view kept refreshing")
	}
	keys(t, m, runes(" "))
	testbus.WaitFor(t, "the kill in the event log", 5*time.Second, func() bool {
		m.Update(tickMsg(time.Now()))
		return strings.Contains(m.View(), "down      "+gpu)
	})
}

// TestTheEventPaneShowsWhatHappenedBeforeAttaching (issue 24 item 6): a
// dashboard attached after the cluster placed its first jobs shows their
// events, read back from the stream the cluster keeps, each once.
func TestTheEventPaneShowsWhatHappenedBeforeAttaching(t *testing.T) {
	_, nc := livetest.Cluster(t, cluster.Config{Timing: cluster.Timing{Speed: 1}, Durability: cluster.Durability{Store: durable.Memory}})
	ctl := observer.NewControl(nc, events.NewSubjects(""))
	rep, err := ctl.Submit([]byte(`{"name":"before-attach","vram":"8GB","duration":"10h"}`))
	if err != nil || rep.State != events.JobPlaced {
		t.Fatalf("submit: %+v %v", rep, err)
	}
	w := livetest.Watcher(t, nc, observer.WatchOptions{Interval: 20 * time.Millisecond})
	testbus.WaitFor(t, "the earlier placement in the event log", 5*time.Second, func() bool {
		n := 0
		for _, l := range w.State().Log {
			if strings.Contains(l.Text, "before-attach") && strings.Contains(l.Text, "started") {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("the earlier start shows %d times", n)
		}
		return n == 1
	})
}

// TestPCyclesTheDemosPoliciesFirst (issue 45 item 9): p goes from binpack
// to spread, the demo's two, then on through the others, and back.
func TestPCyclesTheDemosPoliciesFirst(t *testing.T) {
	got := policyCycle([]string{"best-fit", "binpack", "dotprod", "fgd", "spread"})
	if want := []string{"binpack", "spread", "best-fit", "dotprod", "fgd"}; !slices.Equal(got, want) {
		t.Fatalf("cycle %v, want %v", got, want)
	}
}
