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

	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/observer"
)

const usage = `usage:
  observer [text] [flags]   live text view of the cluster (default)
  observer log [flags]      every event as one JSON line
`

func main() {
	args := os.Args[1:]
	cmd := "text"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("observer "+cmd, flag.ContinueOnError)
	url := fs.String("nats", "nats://127.0.0.1:4222", "NATS URL of the cluster")
	prefix := fs.String("prefix", events.DefaultPrefix, "subject prefix of the cluster")
	interval := fs.Duration("interval", time.Second, "refresh period of the text view")
	once := fs.Bool("once", false, "text view: print one frame and exit")
	out := fs.String("out", "", "log: write to this file instead of stdout")
	if cmd != "text" && cmd != "log" {
		fmt.Fprintf(os.Stderr, "observer: unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(*url, nats.Name("gpusched-observer"), nats.MaxReconnects(-1),
		// Started before the cluster, the observer waits for it rather than failing.
		nats.RetryOnFailedConnect(true), nats.ReconnectWait(500*time.Millisecond))
	if err != nil {
		fmt.Fprintf(os.Stderr, "observer: cannot reach the cluster at %s: %v (start it with: go run ./cmd/cluster)\n", *url, err)
		os.Exit(1)
	}
	defer nc.Close()
	subjects := events.NewSubjects(*prefix)
	switch cmd {
	case "text":
		err = observer.Text(ctx, nc, subjects, os.Stdout, observer.TextOptions{Interval: *interval, Once: *once})
	case "log":
		var w io.Writer = os.Stdout
		if *out != "" {
			f, ferr := os.Create(*out)
			if ferr != nil {
				fmt.Fprintln(os.Stderr, "observer:", ferr)
				os.Exit(1)
			}
			defer f.Close()
			w = f
		}
		err = observer.Log(ctx, nc, subjects, w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "observer:", err)
		os.Exit(1)
	}
}
