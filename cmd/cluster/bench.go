package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpusched/gpusched/bench"
)

func benchCommand(args []string) error {
	fs := flag.NewFlagSet("cluster bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: cluster bench [--quick] [--traces DIR]

Measures, on this machine, in one run, and prints one table: each
placement policy's decision cost at 8 to 100,000 GPUs; submit→placed
latency and placements per second through the whole path (client, NATS,
scheduler, node and GPU actors), with no journal, --memory and the
durable store, in-process and over loopback TCP; the raw bus beside them;
GPU actors' memory and start-up at 10,000 and 100,000; event fan-out to
1, 5 and 20 observers; the openb replay live and offline, and the 6×10
matrix. Each target of docs/PERFORMANCE.md is checked: "met" or "MISSED".
Progress goes to stderr, the table to stdout. --quick is a reduced run of
under a minute.

flags:
`)
		fs.PrintDefaults()
	}
	quick := fs.Bool("quick", false, "a reduced run (under a minute): fewer samples, no 100,000 GPU actors, no replay matrix")
	traces := fs.String("traces", tracesDir(), "the openb trace folder (alibaba-openb); its rows are skipped when absent")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench takes no arguments (got %q)", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := bench.Options{Quick: *quick, Traces: *traces}
	if !*quiet {
		o.Progress = os.Stderr
	}
	t, err := bench.Run(ctx, o)
	if t != nil && len(t.Rows) > 0 {
		t.Print(os.Stdout)
	}
	return err
}
