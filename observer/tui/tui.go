package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nats-io/nats.go"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

// refresh is how often the dashboard redraws from the watcher's state.
const refresh = 250 * time.Millisecond

type tickMsg time.Time

// doneMsg carries the outcome of a command sent to the cluster.
type doneMsg string

// inputKind says what the prompt line is for.
type inputKind int

const (
	inputNone inputKind = iota
	inputJob
	inputKill
)

// Model is the bubbletea model of the dashboard.
type Model struct {
	watch *observer.Watcher
	ctl   *observer.Control
	state observer.State
	view  View
	input inputKind
	text  string
}

// New returns the dashboard over a running watcher.
func New(w *observer.Watcher, ctl *observer.Control) *Model {
	return &Model{watch: w, ctl: ctl, state: w.State(), view: View{Width: 80, Height: 24}}
}

// Run shows the dashboard on the terminal until the user quits or ctx ends.
func Run(ctx context.Context, w *observer.Watcher, ctl *observer.Control) error {
	p := tea.NewProgram(New(w, ctl), tea.WithAltScreen(), tea.WithContext(ctx))
	_, err := p.Run()
	if err == tea.ErrProgramKilled && ctx.Err() != nil {
		return nil
	}
	return err
}

// Attach watches the cluster on nc and shows the dashboard until the user
// quits or ctx ends.
func Attach(ctx context.Context, nc *nats.Conn, subjects events.Subjects) error {
	w, err := observer.NewWatcher(nc, subjects, observer.WatchOptions{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go w.Run(ctx)
	return Run(ctx, w, observer.NewControl(nc, subjects))
}

func tick() tea.Cmd { return tea.Tick(refresh, func(t time.Time) tea.Msg { return tickMsg(t) }) }

// Init starts the redraw ticks.
func (m *Model) Init() tea.Cmd { return tick() }

// Update handles keys, resizes, ticks and command outcomes.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.view.Width, m.view.Height = msg.Width, msg.Height
	case tickMsg:
		if !m.view.Paused {
			m.state = m.watch.State()
		}
		return m, tick()
	case doneMsg:
		m.view.Status = string(msg)
	case tea.KeyMsg:
		if m.input != inputNone {
			return m, m.editKey(msg)
		}
		return m, m.key(msg)
	}
	return m, nil
}

func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "q", "ctrl+c":
		return tea.Quit
	case "?":
		m.view.Help = !m.view.Help
	case "esc":
		m.view.Help = false
	case " ":
		m.view.Paused = !m.view.Paused
		if !m.view.Paused {
			m.state = m.watch.State()
		}
	case "f":
		m.view.Frag = !m.view.Frag
	case "tab":
		m.view.Pane = (m.view.Pane + 1) % paneCount
	case "shift+tab":
		m.view.Pane = (m.view.Pane + paneCount - 1) % paneCount
	case "1", "2", "3", "4":
		m.view.Pane = Pane(k.String()[0] - '1')
	case "]", "pgdown":
		m.view.Page++
	case "[", "pgup":
		m.view.Page = max(0, m.view.Page-1)
	case "p":
		return m.nextPolicy()
	case "b":
		return m.setPolicy("binpack")
	case "s":
		return m.setPolicy("spread")
	case "a":
		m.input, m.text = inputJob, ""
		m.view.Status = "e.g. name=bert vram=20GB util=60 duration=30m priority=high gpus=1 — enter submits, esc cancels"
	case "k":
		m.input, m.text = inputKill, ""
		m.view.Status = "a GPU id (gpu-3, or just 3): enter kills the GPU actor (its jobs are lost and re-queued), esc cancels"
	}
	m.syncPrompt()
	return nil
}

func (m *Model) editKey(k tea.KeyMsg) tea.Cmd {
	switch k.Type {
	case tea.KeyEsc, tea.KeyCtrlC:
		m.input, m.view.Status = inputNone, ""
	case tea.KeyBackspace:
		if r := []rune(m.text); len(r) > 0 {
			m.text = string(r[:len(r)-1])
		}
	case tea.KeyEnter:
		kind, text := m.input, strings.TrimSpace(m.text)
		m.input = inputNone
		m.syncPrompt()
		if kind == inputJob {
			return m.submit(text)
		}
		return m.kill(text)
	case tea.KeySpace:
		m.text += " "
	case tea.KeyRunes:
		m.text += string(k.Runes)
	}
	m.syncPrompt()
	return nil
}

func (m *Model) syncPrompt() {
	switch m.input {
	case inputJob:
		m.view.Prompt = "add job> " + m.text
	case inputKill:
		m.view.Prompt = "kill GPU> " + m.text
	default:
		m.view.Prompt = ""
	}
}

func (m *Model) submit(line string) tea.Cmd {
	ctl := m.ctl
	return func() tea.Msg {
		spec, err := observer.ParseJobLine(line)
		if err != nil {
			return doneMsg("not submitted: " + err.Error())
		}
		rep, err := ctl.Submit(spec)
		if err != nil {
			return doneMsg("refused: " + err.Error())
		}
		return doneMsg(fmt.Sprintf("job %s %s", rep.JobID, rep.State))
	}
}

func (m *Model) kill(gpu string) tea.Cmd {
	ctl := m.ctl
	if gpu != "" && strings.Trim(gpu, "0123456789") == "" {
		gpu = "gpu-" + gpu // the demo's GPUs are gpu-0 … gpu-7
	}
	return func() tea.Msg {
		rep, err := ctl.Kill(gpu)
		if err != nil {
			return doneMsg("kill refused: " + err.Error())
		}
		return doneMsg(fmt.Sprintf("%s killed: %d job(s) lost and re-queued; back as incarnation %d", rep.GPU, len(rep.LostJobs), rep.Incarnation))
	}
}

// nextPolicy switches to the policy after the current one in the list the
// scheduler offers.
func (m *Model) nextPolicy() tea.Cmd {
	ctl := m.ctl
	return func() tea.Msg {
		cur, err := ctl.Strategy("")
		if err != nil {
			return doneMsg("policy: " + err.Error())
		}
		if len(cur.Available) == 0 {
			return doneMsg("policy: the scheduler offers no policies")
		}
		order := policyCycle(cur.Available)
		next := order[(slices.Index(order, cur.Policy)+1)%len(order)]
		rep, err := ctl.Strategy(next)
		if err != nil {
			return doneMsg("policy: " + err.Error())
		}
		return doneMsg(fmt.Sprintf("policy %s → %s", rep.Previous, rep.Policy))
	}
}

// policyCycle is the order p goes through the policies: the demo's two
// (binpack, then spread) first, then the others as the scheduler lists
// them.
func policyCycle(available []string) []string {
	var order []string
	for _, p := range []string{"binpack", "spread"} {
		if slices.Contains(available, p) {
			order = append(order, p)
		}
	}
	for _, p := range available {
		if !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	return order
}

// setPolicy switches to the named policy (b and s: the demo's two).
func (m *Model) setPolicy(name string) tea.Cmd {
	ctl := m.ctl
	return func() tea.Msg {
		rep, err := ctl.Strategy(name)
		if err != nil {
			return doneMsg("policy: " + err.Error())
		}
		return doneMsg(fmt.Sprintf("policy %s → %s", rep.Previous, rep.Policy))
	}
}

// View draws the frame.
func (m *Model) View() string { return Render(m.state, m.view) }
