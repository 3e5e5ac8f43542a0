// Package tui owns the terminal dashboard (bubbletea + lipgloss): GPU cards
// or condensed GPU lines, the running jobs, the queue with pending reasons,
// why each job sits where it does, the event log, and keys to switch the
// policy, show the VRAM layout, submit a job, kill a GPU and pause. The
// frame is a pure function of an observer.State and the view options
// (Render), so it is tested at any size without a terminal.
package tui
