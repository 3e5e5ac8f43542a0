package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/term"

	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/observer/tui"
)

const usage = `usage:
  observer [flags]                       the terminal dashboard on a terminal, else the text view
  observer tui [flags]                   the terminal dashboard (bubbletea)
  observer text [--once] [flags]         a refreshing plain-text view
  observer web --listen 127.0.0.1:8080   the web dashboard
  observer metrics --listen 127.0.0.1:9090   Prometheus metrics at /metrics
  observer log [--out FILE] [--json]     every event: a readable line on a terminal, one JSON line
                                         into a pipe or a file (or with --json); --since 10m or --from-start
                                         replays the kept events first, --durable NAME resumes after a restart
  observer record --out run.jsonl        the same, into a file (for observer report); an existing file is
                                         continued after its last event, no gap (--overwrite: anew)
  observer report RUN --out DIR          summary, per-job CSV and PNG plots of a recorded
                                         run.jsonl or a cluster replay/compare output folder
  observer check [--for 10m] [--json]    assert the cluster's invariants live: violations at
                                         once, a summary on exit, exit status 1 on any violation

flags of the live commands:
  --nats URL      the cluster's NATS URL (default nats://127.0.0.1:4222)
  --prefix P      the cluster's subject prefix (default gpusched)
  --creds, --nkey, --user/--password, --token, --tlscert/--tlskey, --tlsca   as the nats CLI's
`

// examples is an example of each live command, shown by its -h.
var examples = map[string]string{
	"tui":     "observer tui --nats nats://127.0.0.1:4222",
	"text":    "observer text --once",
	"web":     "observer web --listen 127.0.0.1:8080   # then open http://127.0.0.1:8080",
	"metrics": "observer metrics --listen 127.0.0.1:9090 & curl -s 127.0.0.1:9090/metrics | grep gpusched_",
	"log":     "observer log --since 10m | jq -c 'select(.type | startswith(\"gpusched.job.\"))'",
	"record":  "observer record --out run.jsonl   # then: observer report run.jsonl --out run-report/",
	"check":   "observer check --from-start --for 1m",
}

func main() {
	args := os.Args[1:]
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	if cmd == "" {
		cmd = "text"
		if term.IsTerminal(int(os.Stdout.Fd())) && term.IsTerminal(int(os.Stdin.Fd())) {
			cmd = "tui"
		}
	}
	if cmd == "help" {
		fmt.Print(usage)
		return
	}
	if cmd == "report" {
		os.Exit(reportCommand(args))
	}
	known := map[string]bool{"tui": true, "text": true, "web": true, "metrics": true, "log": true, "record": true, "check": true}
	if !known[cmd] {
		fmt.Fprintf(os.Stderr, "observer: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	fs := flag.NewFlagSet("observer "+cmd, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nexample:\n  %s\n\nflags of observer %s:\n", usage, examples[cmd], cmd)
		fs.PrintDefaults()
	}
	var busOpt bus.Options
	busOpt.AddFlags(fs, "nats://127.0.0.1:4222", "NATS URL of the cluster (several: comma-separated)")
	url := &busOpt.URLs
	var hist observer.History
	fs.BoolVar(&hist.FromStart, "from-start", false, "log, record, check: replay every event the cluster's stream keeps, then go live")
	fs.DurationVar(&hist.Since, "since", 0, "log, record, check: replay the events of this last stretch (e.g. 10m), then go live")
	fs.StringVar(&hist.Durable, "durable", "", "log, record, check: a durable reader's name: restarted with it, the observer continues\n"+
		"after the last event it took, without a gap")
	prefix := fs.String("prefix", events.DefaultPrefix, "subject prefix of the cluster")
	interval := fs.Duration("interval", time.Second, "text view: refresh period")
	once := fs.Bool("once", false, "text view: print one frame and exit")
	out := fs.String("out", "", "log, record: write to this file instead of stdout")
	listen := fs.String("listen", "", "web, metrics: HOST:PORT to serve on (default 127.0.0.1:8080 for web, 127.0.0.1:9090 for metrics)")
	overwrite := fs.Bool("overwrite", false, "record: start the file anew (by default an existing recording is continued after its last event)")
	checkFor := fs.Duration("for", 0, "check: stop after this long (default: until interrupted)")
	checkJSON := fs.Bool("json", false, "check: print the summary as JSON; log: the events' JSON lines even on a terminal (a pipe or a file always gets them)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "observer %s: unexpected argument %q\n", cmd, fs.Arg(0))
		os.Exit(2)
	}
	if hist.Replays() && cmd != "log" && cmd != "record" && cmd != "check" {
		fmt.Fprintf(os.Stderr, "observer %s: --since, --from-start and --durable are for log, record and check\n", cmd)
		os.Exit(2)
	}
	if hist.Since < 0 {
		fmt.Fprintln(os.Stderr, "observer: --since must be a positive duration, e.g. 10m")
		os.Exit(2)
	}
	if hist.Durable != "" && !model.ValidToken(hist.Durable) {
		fmt.Fprintf(os.Stderr, "observer: --durable %q: use letters, digits, - and _ only\n", hist.Durable)
		os.Exit(2)
	}
	if err := busOpt.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "observer:", err)
		os.Exit(2)
	}
	if cmd == "record" && *out == "" {
		fmt.Fprintln(os.Stderr, "observer record: --out FILE is required (e.g. --out run.jsonl)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := busOpt.NATSOptions()
	if err != nil {
		fmt.Fprintln(os.Stderr, "observer:", err)
		os.Exit(2)
	}
	// Started before the cluster, the observer waits for it rather than
	// failing (NATSOptions retries) — but not for credentials or
	// certificates the server refuses: those would fail for ever. A slow
	// consumer is reported by the seq gaps ("events missed"), not printed
	// over a dashboard; refused requests are handed to their callers.
	opts = append(opts, nats.Name("gpusched-observer-"+cmd), nats.ReconnectWait(500*time.Millisecond),
		nats.ErrorHandler(bus.HandleErrors),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			if bus.Refusal(err) {
				fmt.Fprintf(os.Stderr, "observer: the cluster at %s refused the connection: %v\n", *url, bus.Explain(err))
				os.Exit(1)
			}
		}))
	nc, err := nats.Connect(*url, opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "observer: cannot reach the cluster at %s: %v (start it with: go run ./cmd/cluster)\n", *url, err)
		os.Exit(1)
	}
	defer nc.Close()
	subjects := events.NewSubjects(*prefix)
	switch cmd {
	case "text":
		err = observer.Text(ctx, nc, subjects, os.Stdout, observer.TextOptions{Interval: *interval, Once: *once})
	case "tui":
		err = tui.Attach(ctx, nc, subjects)
	case "web":
		err = runWeb(ctx, nc, subjects, or(*listen, "127.0.0.1:8080"))
	case "metrics":
		err = runMetrics(ctx, nc, subjects, or(*listen, "127.0.0.1:9090"))
	case "check":
		os.Exit(runCheck(ctx, nc, subjects, *url, *checkFor, *checkJSON, hist))
	case "log", "record":
		var w io.Writer = os.Stdout
		switch {
		case cmd == "record" && !*overwrite && !hist.Replays():
			// A recording that exists is continued after its last event.
			f, resume, ferr := observer.OpenRecording(*out)
			if ferr != nil {
				fmt.Fprintln(os.Stderr, "observer:", ferr)
				os.Exit(1)
			}
			defer f.Close()
			w, hist = f, resume
			if resume.AfterID != "" {
				fmt.Fprintf(os.Stderr, "observer: %s exists: continuing after its last event (%s), from the kept event stream\n",
					*out, resume.AfterTime.Format(time.RFC3339))
			}
		case *out != "":
			f, ferr := os.Create(*out)
			if ferr != nil {
				fmt.Fprintln(os.Stderr, "observer:", ferr)
				os.Exit(1)
			}
			defer f.Close()
			w = f
		}
		if cmd == "record" {
			fmt.Fprintf(os.Stderr, "observer: recording every event of %s to %s (Ctrl-C stops)\n", *url, *out)
		}
		if hist.Replays() {
			// ReadEvents needs the stream: wait for the first connection.
			for !nc.IsConnected() && ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		if cmd == "log" && *out == "" && !*checkJSON && term.IsTerminal(int(os.Stdout.Fd())) {
			// A person at a terminal reads sentences; a pipe or a file
			// (or --json) gets the events' JSON lines.
			w = observer.Readable(w)
		}
		err = observer.Log(ctx, nc, subjects, hist, w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "observer:", err)
		os.Exit(1)
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
