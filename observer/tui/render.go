package tui

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/vram"
)

// Pane is the lower pane a small terminal shows (a tall one shows them all).
type Pane int

// The lower panes.
const (
	PaneRunning Pane = iota
	PaneQueue
	PaneWhy
	PaneEvents
	paneCount
)

var paneNames = [...]string{"Running", "Queue", "Why", "Events"}

// View is what the user chose to see.
type View struct {
	Width, Height int
	// Frag shows each GPU's VRAM layout as blocks, free holes visible.
	Frag bool
	// Page is the page of GPUs shown when they do not all fit.
	Page   int
	Pane   Pane
	Paused bool
	// Prompt, when not empty, is the input line being edited (a job to
	// submit, a GPU to kill); Status is the last action's outcome.
	Prompt string
	Status string
	// Help shows the plain-English explanations (?) instead of the cluster.
	Help bool
}

// helpTopics are the explanations the ? screen shows, in order, with the
// label each goes under.
var helpTopics = []struct{ key, label string }{
	{"strategy", "policy (b, s, p)"}, {"queue", "queue"}, {"priority", "priority"}, {"preemption", "preempt"},
	{"vram", "VRAM"}, {"fragmentation", "frag (f)"}, {"frag_gpus", "frag … GPUs"}, {"allocation", "alloc"},
	{"utilisation", "util"}, {"power", "W"}, {"energy", "kWh"}, {"why", "Why pane"}, {"add-job", "add job (a)"},
	{"kill", "kill GPU (k)"}, {"events", "Events pane"}, {"simulated", "the clock"}, {"perf-level", "lvl A0 B1 …"},
}

// helpScreen is the ? screen: what each figure and control means, and
// what the policy in force costs.
func helpScreen(st observer.State, w, h int) []string {
	lines := []string{styleTitle.Render(fit(" gpusched · what everything means (? or esc closes)", w)), ""}
	if st.Snapshot != nil {
		if t := observer.Tradeoff(st.Snapshot.Policy); t != "" {
			lines = append(lines, wrap(styleBold.Render("now: "+st.Snapshot.Policy)+" — "+t, w, "")...)
			lines = append(lines, "")
		}
	}
	for _, topic := range helpTopics {
		lines = append(lines, wrap(styleBold.Render(topic.label)+"  "+observer.Explanations[topic.key], w, "    ")...)
	}
	lines = append(lines, "", styleBold.Render("placement policies")+" (b, s, p; cluster strategy POLICY)")
	for _, p := range policy.Names[policy.Policy]() {
		if t := observer.Tradeoff(p); t != "" {
			lines = append(lines, wrap("  "+p+" — "+t, w, "    ")...)
		}
	}
	lines = append(lines, "", styleBold.Render("queue orders")+" (cluster strategy --queue)")
	for _, q := range policy.Names[policy.QueueSort]() {
		lines = append(lines, wrap("  "+q+" — "+observer.QueueTradeoffs[q], w, "    ")...)
	}
	return lines
}

// wrap breaks s into lines of at most w cells at spaces, indenting the
// lines after the first.
func wrap(s string, w int, indent string) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case lipgloss.Width(line+" "+word) <= w:
			line += " " + word
		default:
			out = append(out, fit(line, w))
			line = indent + word
		}
	}
	return append(out, fit(line, w))
}

var (
	styleTitle  = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("15")).Background(lipgloss.Color("24"))
	styleDim    = lipgloss.NewStyle().Foreground(lipgloss.Color("245"))
	styleBold   = lipgloss.NewStyle().Bold(true)
	styleDown   = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("9"))
	styleHeader = lipgloss.NewStyle().Bold(true).Underline(true)
	styleTab    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("75"))
	styleCard   = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("240")).Padding(0, 0)
	styleHole   = lipgloss.NewStyle().Foreground(lipgloss.Color("238"))
	// jobColours tell a GPU's jobs apart in the VRAM layout.
	jobColours = []string{"39", "208", "170", "42", "220", "204", "81", "141"}
)

// utilStyle colours a utilisation: green when light, amber, red when saturated.
func utilStyle(pct float64) lipgloss.Style {
	switch {
	case pct >= 85:
		return lipgloss.NewStyle().Foreground(lipgloss.Color("196"))
	case pct >= 50:
		return lipgloss.NewStyle().Foreground(lipgloss.Color("214"))
	}
	return lipgloss.NewStyle().Foreground(lipgloss.Color("41"))
}

// Layout sizes.
const (
	cardInner  = 24 // a card's text width
	cardWidth  = cardInner + 2
	cardHeight = 4 + 2
	// minLower is the fewest lines the lower pane keeps on a small terminal.
	minLower = 9
	// tallEnough is the height from which every lower pane is shown at once.
	tallEnough = 44
)

// Render draws one frame of the dashboard for st at v's size: at most
// v.Height lines, none wider than v.Width.
func Render(st observer.State, v View) string {
	w, h := max(v.Width, 40), max(v.Height, 12)
	var lines []string
	add := func(s ...string) {
		for _, l := range s {
			lines = append(lines, strings.Split(l, "\n")...)
		}
	}
	snap := st.Snapshot
	if snap == nil {
		msg := "waiting for the cluster…"
		if st.Err != "" {
			msg = st.Err
		}
		add(styleTitle.Render(fit(" gpusched observer", w)), "", "  "+msg)
		for len(lines) < h-1 {
			lines = append(lines, "")
		}
		return strings.Join(append(lines, footerLine(st, v, w)), "\n")
	}
	if v.Help {
		add(helpScreen(st, w, h)...)
		for len(lines) < h-1 {
			lines = append(lines, "")
		}
		return strings.Join(append(lines[:h-1], footerLine(st, v, w)), "\n")
	}
	add(styleTitle.Render(fit(header(st), w)))
	add(headlineLines(snap, w)...)

	footer := footerLine(st, v, w)
	lowerMin := minLower
	if h >= tallEnough {
		lowerMin = h / 2
	}
	budget := h - len(lines) - 1 - lowerMin // lines left for the GPUs
	gpuBlock, pageLine := gpuArea(snap, st, v, w, budget)
	add(gpuBlock...)
	if pageLine != "" {
		add(styleDim.Render(fit(pageLine, w)))
	}
	lower := h - len(lines) - 1
	add(lowerPanes(st, v, w, lower)...)
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	lines = lines[:h-1]
	lines = append(lines, footer)
	return strings.Join(lines, "\n")
}

func header(st observer.State) string {
	s := st.Snapshot
	live := "● live"
	if !st.Connected {
		live = "○ reconnecting"
	}
	pol := s.Policy
	if q := s.Summary.Queue; q != "" && q != policy.DefaultQueue {
		pol += ", queue " + q // said only when not the default: the line is short
	}
	return fmt.Sprintf(" gpusched │ policy %s │ %s │ %s, %d busy │ %s ", pol,
		s.SimTime.Format("Jan 2 15:04:05"), observer.Count(s.Summary.GPUs, "GPU"), s.Summary.GPUsBusy, live)
}

// headlineLines are the cluster's figures, as many lines of at most w
// cells as they need (a figure is never cut).
func headlineLines(s *events.Snapshot, w int) []string {
	m := s.Summary
	var figures []string
	if m.Settling {
		// A restarted scheduler re-learning the cluster: the figures are
		// the last known ones, and say so first.
		figures = append(figures, styleDim.Render(fmt.Sprintf("re-learning the cluster (%s not read yet): last known figures", observer.Count(m.GPUsUnknown, "GPU"))))
	}
	figures = append(figures, fmt.Sprintf("util %.0f%%", m.UtilMean), fmt.Sprintf("alloc %.0f%%", 100*m.Allocation),
		fmt.Sprintf("frag %.2f GPUs, VRAM %.0f%%", m.FragAmount, 100*m.VRAMFragmentation), fmt.Sprintf("queue %d", m.JobsQueued),
		fmt.Sprintf("running %d", m.JobsRunning), fmt.Sprintf("done %d", m.JobsCompleted), fmt.Sprintf("preempt %d", m.Preemptions),
		fmt.Sprintf("%.0f W", m.PowerW), fmt.Sprintf("%.2f kWh", m.EnergyKWh))
	var lines []string
	line := ""
	for _, f := range figures {
		switch {
		case line == "":
			line = " " + f
		case lipgloss.Width(line+" · "+f) <= w:
			line += " · " + f
		default:
			lines = append(lines, fit(line, w))
			line = " " + f
		}
	}
	return append(lines, fit(line, w))
}

func footerLine(st observer.State, v View, w int) string {
	if v.Prompt != "" {
		return styleBold.Render(fit(v.Prompt+"█", w))
	}
	keys := "? what it means  b binpack  s spread  p next policy  f frag  a add job  k kill GPU  space pause  tab pane  [ ] page  q quit"
	var extra []string
	if v.Paused {
		extra = append(extra, styleDown.Render("PAUSED"))
	}
	if st.Missed > 0 {
		extra = append(extra, fmt.Sprintf("%d events missed", st.Missed))
	}
	if v.Status != "" {
		extra = append(extra, v.Status)
	}
	if len(extra) > 0 {
		return fit(strings.Join(extra, " · ")+" │ "+keys, w)
	}
	return styleDim.Render(fit(keys, w))
}

// gpuArea draws the GPUs in budget lines: cards when they all fit, else one
// line per GPU, paged when even those do not fit.
func gpuArea(s *events.Snapshot, st observer.State, v View, w, budget int) ([]string, string) {
	names := observer.JobNames(s)
	gpus := s.GPUs
	perRow := max(1, w/cardWidth)
	rows := (len(gpus) + perRow - 1) / perRow
	if rows*cardHeight <= budget {
		var out []string
		for r := 0; r < rows; r++ {
			var cards []string
			for _, g := range gpus[r*perRow : min(len(gpus), (r+1)*perRow)] {
				cards = append(cards, card(g, names, v.Frag))
			}
			out = append(out, lipgloss.JoinHorizontal(lipgloss.Top, cards...))
		}
		return out, ""
	}
	// One line per GPU, in columns when the terminal is wide.
	colWidth := 78
	cols := max(1, w/colWidth)
	if cols == 1 {
		colWidth = w
	}
	perPage := max(1, (budget-2)*cols) // two lines: the page line and the heat map
	pages := (len(gpus) + perPage - 1) / perPage
	page := min(max(v.Page, 0), pages-1)
	shown := gpus[page*perPage : min(len(gpus), (page+1)*perPage)]
	rowsShown := (len(shown) + cols - 1) / cols
	out := make([]string, rowsShown)
	for i, g := range shown {
		r := i % rowsShown
		l := gpuLine(g, names, v.Frag, colWidth)
		if out[r] != "" {
			out[r] += " "
		}
		out[r] += l
	}
	if pages == 1 {
		return out, ""
	}
	heat := heatMap(gpus, w-12)
	out = append(out, styleDim.Render("util map ")+heat)
	first := page*perPage + 1
	return out, fmt.Sprintf("GPUs %d–%d of %d · page %d/%d ([ ] to page)", first, first+len(shown)-1, len(gpus), page+1, pages)
}

// heatMap is the whole cluster at a glance: one cell per GPU, its height
// its utilisation (condensed to width cells, each the mean of its GPUs).
func heatMap(gpus []events.SnapshotGPU, width int) string {
	levels := []rune("▁▂▃▄▅▆▇█")
	n := len(gpus)
	cells := min(n, max(width, 1))
	var b strings.Builder
	for c := 0; c < cells; c++ {
		lo, hi := c*n/cells, (c+1)*n/cells
		var sum float64
		down, unknown := false, false
		for _, g := range gpus[lo:hi] {
			sum += g.Util
			unknown = unknown || g.Unknown
			down = down || (!g.Alive && !g.Unknown)
		}
		mean := sum / float64(max(hi-lo, 1))
		r := levels[min(len(levels)-1, int(mean/100*float64(len(levels)-1)+0.5))]
		if down {
			b.WriteString(styleDown.Render("x"))
			continue
		}
		if unknown {
			b.WriteString(styleDim.Render("?"))
			continue
		}
		b.WriteString(utilStyle(mean).Render(string(r)))
	}
	return b.String()
}

func card(g events.SnapshotGPU, names map[string]string, frag bool) string {
	title := g.GPU + " " + g.Model
	switch {
	case g.Unknown && !g.Stale:
		// Nothing known of it: no figures, not zeros.
		lines := []string{styleBold.Render(fit(g.GPU+" "+styleDim.Render("unknown yet"), cardInner)),
			styleDim.Render(fit("not read since the", cardInner)), styleDim.Render(fit("scheduler restarted", cardInner))}
		return styleCard.Width(cardInner).Render(strings.Join(lines, "\n"))
	case g.Unknown:
		// Its last known figures, greyed: the scheduler has not read it
		// since it restarted.
		title = g.GPU + " " + styleDim.Render("last known")
	case !g.Alive:
		title = g.GPU + " " + styleDown.Render("DOWN")
	}
	lines := []string{
		styleBold.Render(fit(title, cardInner)),
		"util " + utilStyle(g.Util).Render(bar(g.Util/100, 11)) + " " + pctText(g.Util),
	}
	used := fmt.Sprintf(" %s/%sGB", gb(g.VRAMUsed), gb(g.VRAMTotal))
	if frag {
		lines = append(lines, "vram "+layoutBar(g, cardInner-5))
	} else {
		lines = append(lines, "vram "+bar(frac(g.VRAMUsed, g.VRAMTotal), 10)+fit(used, cardInner-15))
	}
	if perf := perfLevels(g); perf != "" {
		lines = append(lines, fit(perf, cardInner))
	}
	lines = append(lines, fit(jobsOn(g, names), cardInner))
	if g.Stale {
		for i := range lines[1:] {
			lines[i+1] = styleDim.Render(ansi.Strip(lines[i+1]))
		}
	}
	return styleCard.Width(cardInner).Render(strings.Join(lines, "\n"))
}

// perfLevels is a GPU's performance level per application class ("lvl
// A0 B1 C0 D1": L0 the fastest; ? explains), when the cluster has a
// variability profile; "" otherwise.
func perfLevels(g events.SnapshotGPU) string {
	if len(g.Variability) == 0 {
		return ""
	}
	classes := make([]string, 0, len(g.Variability))
	for c := range g.Variability {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	var b strings.Builder
	b.WriteString("lvl")
	for _, c := range classes {
		level := "?"
		if l, ok := g.PerfLevels[c]; ok {
			level = strconv.Itoa(l)
		}
		b.WriteString(" " + strings.TrimPrefix(c, "class") + level)
	}
	return b.String()
}

func gpuLine(g events.SnapshotGPU, names map[string]string, frag bool, width int) string {
	state := ""
	switch {
	case g.Unknown:
		state = styleDim.Render(" unknown yet")
	case !g.Alive:
		state = styleDown.Render(" DOWN")
	}
	head := fmt.Sprintf("%-7s %-10s ", trunc(g.GPU, 7), trunc(g.Model, 10))
	if g.Unknown && !g.Stale {
		// Nothing known of it: no figures, not zeros.
		return fit(head+styleDim.Render("unknown yet: not read since the scheduler restarted"), width)
	}
	if g.Stale {
		state = styleDim.Render(" last known")
	}
	util := utilStyle(g.Util).Render(bar(g.Util/100, 8)) + " " + pctText(g.Util) + " "
	var vr string
	if frag {
		vr = layoutBar(g, 20) + " "
	} else {
		vr = bar(frac(g.VRAMUsed, g.VRAMTotal), 8) + fmt.Sprintf(" %3s/%-3sGB ", gb(g.VRAMUsed), gb(g.VRAMTotal))
	}
	rest := width - lipgloss.Width(head+util+vr) - lipgloss.Width(state)
	line := head + util + vr + fit(jobsOn(g, names), max(rest, 0))
	if g.Stale {
		line = styleDim.Render(ansi.Strip(line))
	}
	return fit(line+state, width)
}

func jobsOn(g events.SnapshotGPU, names map[string]string) string {
	jobs := observer.JobsOn(g, names)
	if len(jobs) == 0 {
		return styleDim.Render("idle")
	}
	return strings.Join(jobs, ", ")
}

// layoutBar draws a GPU's VRAM address space in width cells: each job's
// allocation in its colour, free holes as dots, so fragmentation shows as
// dots between blocks.
func layoutBar(g events.SnapshotGPU, width int) string {
	if g.VRAMTotal <= 0 {
		return strings.Repeat(" ", width)
	}
	cells := make([]int, width) // -1 free, else index of the alloc
	for i := range cells {
		cells[i] = -1
	}
	allocs := slices.Clone(g.Allocs)
	slices.SortFunc(allocs, func(a, b vram.Alloc) int { return cmp.Compare(a.Offset, b.Offset) })
	for i, a := range allocs {
		lo := int(a.Offset * int64(width) / g.VRAMTotal)
		hi := int((a.Offset + a.Size) * int64(width) / g.VRAMTotal)
		if hi == lo {
			hi = lo + 1 // a small job still shows
		}
		for c := lo; c < min(hi, width); c++ {
			cells[c] = i
		}
	}
	var b strings.Builder
	for c := 0; c < width; {
		e := c
		for e < width && cells[e] == cells[c] {
			e++
		}
		if cells[c] < 0 {
			b.WriteString(styleHole.Render(strings.Repeat("·", e-c)))
		} else {
			col := jobColours[colourOf(allocs[cells[c]].Owner)]
			b.WriteString(lipgloss.NewStyle().Foreground(lipgloss.Color(col)).Render(strings.Repeat("█", e-c)))
		}
		c = e
	}
	return b.String()
}

func colourOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(len(jobColours)))
}

func lowerPanes(st observer.State, v View, w, h int) []string {
	if h <= 1 {
		return nil
	}
	if h+0 >= tallEnough/2 {
		// Room for every pane: running and queue side by side when wide,
		// then why and the events.
		per := h / 4
		var out []string
		for p := Pane(0); p < paneCount; p++ {
			n := per
			if p == paneCount-1 {
				n = h - len(out)
			}
			out = append(out, styleHeader.Render(fit(paneTitle(st, p), w)))
			out = append(out, pane(st, p, w, n-1)...)
			for len(out) < int(p+1)*per && p != paneCount-1 {
				out = append(out, "")
			}
		}
		return out
	}
	var tabs []string
	for p := Pane(0); p < paneCount; p++ {
		t := fmt.Sprintf(" %d %s ", p+1, paneTitle(st, p))
		if p == v.Pane {
			t = styleTab.Render(t)
		}
		tabs = append(tabs, t)
	}
	out := []string{fit(strings.Join(tabs, " "), w)}
	return append(out, pane(st, v.Pane, w, h-1)...)
}

func paneTitle(st observer.State, p Pane) string {
	s := st.Snapshot
	switch p {
	case PaneRunning:
		return fmt.Sprintf("Running (%d)", s.Summary.JobsRunning)
	case PaneQueue:
		return fmt.Sprintf("Queue (%d)", s.Summary.JobsQueued)
	}
	return paneNames[p]
}

func pane(st observer.State, p Pane, w, h int) []string {
	if h <= 0 {
		return nil
	}
	s := st.Snapshot
	var out []string
	more := func(n int) {
		if len(out) > h {
			// h-1 lines shown of n, the last line says how many are not.
			out = append(out[:h-1], styleDim.Render(fmt.Sprintf("… %d more", n-(h-1))))
		}
	}
	switch p {
	case PaneRunning:
		out = append(out, styleDim.Render(fit(fmt.Sprintf("%-20s %-6s %7s %5s %8s %5s  %s", "JOB", "PRIO", "VRAM", "UTIL", "DURATION", "DONE", "GPU"), w)))
		for _, j := range s.Running {
			done := fmt.Sprintf("%4.0f%%", pct(j.ProgressS, j.WorkS))
			if j.TrainingState != nil {
				done = fmt.Sprintf("%5s", "ep"+strconv.Itoa(j.TrainingState.Epoch)) // its progress is in its application's steps
			}
			out = append(out, fit(fmt.Sprintf("%-20s %-6s %7s %4.0f%% %8s %s  %s", trunc(j.Name, 20), j.Priority,
				observer.JobVRAM(j), j.Util, trunc(observer.JobDuration(j), 8), done, strings.Join(j.GPUIDs, ",")), w))
		}
		more(len(s.Running) + 1)
	case PaneQueue:
		out = append(out, styleDim.Render(fit(fmt.Sprintf("%-20s %-6s %7s %7s  %s", "JOB", "PRIO", "VRAM", "WAITING", "WHY IT WAITS"), w)))
		for _, j := range s.Queue {
			wait := s.SimTime.Sub(j.SubmittedAt).Round(time.Second)
			out = append(out, fit(fmt.Sprintf("%-20s %-6s %7s %7s  %s", trunc(j.Name, 20), j.Priority,
				observer.JobVRAM(j), shortDur(wait), j.Reason), w))
		}
		if len(s.Queue) == 0 {
			out = append(out, styleDim.Render(fit("0 waiting — add a job with a, or: cluster submit --name N --vram 20GB --duration 30m", w)))
		}
		more(len(s.Queue) + 1)
	case PaneWhy:
		for _, j := range s.Queue {
			out = append(out, fit(fmt.Sprintf("%-20s waits: %s", trunc(j.Name, 20), j.Reason), w))
		}
		for _, j := range s.Running {
			out = append(out, fit(fmt.Sprintf("%-20s %s", trunc(j.Name, 20), whyPlaced(st.Decisions[j.JobID], j)), w))
		}
		more(len(out))
	case PaneEvents:
		log := st.Log
		if len(log) > h {
			log = log[len(log)-h:]
		}
		for _, l := range log {
			out = append(out, fit(l.Text, w))
		}
	}
	return out
}

// whyPlaced says which candidates and scores chose a running job's GPUs.
func whyPlaced(d events.Decision, j events.JobInfo) string {
	if d.JobID == "" {
		return "on " + strings.Join(j.GPUIDs, ",") + " (decision not seen yet)"
	}
	if note := observer.PinNote(d); note != "" {
		return note
	}
	s := fmt.Sprintf("→ %s by %s", strings.Join(d.GPUs, ","), d.Policy)
	var others []string
	for _, c := range d.Candidates {
		if c.Ranked != "" {
			others = append(others, fmt.Sprintf("%s %.1f (%s)", strings.Join(c.GPUs, "+"), c.Score, c.Ranked))
		} else {
			others = append(others, fmt.Sprintf("%s %.1f", strings.Join(c.GPUs, "+"), c.Score))
		}
	}
	if len(others) > 0 {
		s += " · candidates " + strings.Join(others, ", ")
	}
	if len(d.Victims) > 0 {
		s += fmt.Sprintf(" · preempted %d", len(d.Victims))
	}
	return s
}

// pctText writes a GPU's utilisation in four cells: a GPU cannot be more
// than fully busy, so jobs asking more than 100% together (saturated, each
// slowed) show as "100+".
func pctText(util float64) string {
	if util > 100 {
		return "100+"
	}
	return fmt.Sprintf("%3.0f%%", util)
}

func pct(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

func frac(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func shortDur(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%.1fh", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.0fm", d.Minutes())
	}
	return fmt.Sprintf("%.0fs", d.Seconds())
}

func bar(f float64, width int) string {
	f = min(max(f, 0), 1)
	n := int(f*float64(width) + 0.5)
	return strings.Repeat("█", n) + strings.Repeat("░", width-n)
}

// gb writes a size in GB, the one unit of memory on screen (model.GB: an
// A100 40GB has 40, a job asking 38GB shows 38).
func gb(b int64) string { return model.Bytes(b).GBNumber() }

func trunc(s string, n int) string {
	if lipgloss.Width(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// fit pads or cuts s (which may carry colour) to exactly width cells.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	cw := lipgloss.Width(s)
	if cw <= width {
		return s + strings.Repeat(" ", width-cw)
	}
	return lipgloss.NewStyle().MaxWidth(width).Render(s)
}
