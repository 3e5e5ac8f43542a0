package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/gpusched/gpusched/actors/jobgen"
	"github.com/gpusched/gpusched/actors/scheduler"
	"github.com/gpusched/gpusched/actors/scheduler/core"
	"github.com/gpusched/gpusched/auth"
	"github.com/gpusched/gpusched/bus"
	"github.com/gpusched/gpusched/chaos"
	"github.com/gpusched/gpusched/cluster"
	"github.com/gpusched/gpusched/durable"
	"github.com/gpusched/gpusched/events"
	"github.com/gpusched/gpusched/model"
	"github.com/gpusched/gpusched/observer"
	"github.com/gpusched/gpusched/observer/tui"
	"github.com/gpusched/gpusched/openb"
	"github.com/gpusched/gpusched/policy"
	"github.com/gpusched/gpusched/pollux"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/simclock"
	"github.com/gpusched/gpusched/vram"
)

const usage = `usage:
  cluster [run] [flags]         run a cluster (embedded NATS with JetStream, node, GPU, scheduler and job generator actors;
                                --nats URL for an external bus, --no-gpus for the control plane only)
  cluster node --name N --gpus 8xA100-80GB --nats URL   run one GPU node's actors, joining a running cluster
  cluster submit [flags]        submit a job
  cluster get JOB_ID            a job's state and history
  cluster list [--state S]      jobs, oldest first
  cluster cancel JOB_ID         cancel a job
  cluster explain JOB_ID        why a job waits, or how it was placed
  cluster strategy [POLICY]     show or switch the placement policy
  cluster snapshot [--page N]   the cluster state as JSON
  cluster chaos kill GPU_ID     crash a GPU actor: its supervisor restarts it empty; its jobs are re-queued
  cluster chaos hang GPU_ID --duration 30s        freeze a GPU actor (declared dead when its lease runs out)
  cluster chaos partition GPU_ID --duration 30s   cut a GPU actor off the bus
  cluster chaos delay GPU_ID --delay 200ms [--duration 30s]   delay its messages ("0s" clears)
  cluster chaos drop GPU_ID --drop 0.2 [--duration 30s]       drop that fraction of its messages (0 clears)
  cluster chaos kill-scheduler  crash the scheduler: it restarts and re-learns running jobs from the GPUs
  cluster replay [flags]        replay the FGD paper's protocol on an openb trace (live or --offline)
  cluster replay --timed [...]  replay a trace in time (arrivals, run times, priorities) on a virtual clock
  cluster replay --pollux DIR   the Pollux paper's workloads under Tiresias, Optimus or Pollux, each JCT beside the published one
  cluster replay --gavel DIR --offline   the Gavel paper's simulator runs (FIFO, Isolated, AlloX, Gandiva, the LP policies), each JCT beside the reference's
  cluster compare [flags]       the same seeded workload under several policies, side by side
  cluster compare --pollux DIR  one of the Pollux paper's workloads under its three policies, side by side
  cluster compare --gavel DIR   one Gavel trace under its policies and seeds: JCT, makespan, utilisation, finish-time fairness ρ
  cluster auth init [--tenants a,b] [--nodes n1]   write a roles file, keys and a self-signed TLS set (docs/SECURITY.md)
  cluster simtest [--seeds 1-1000] [--hours 24]   many seeds, each a drawn cluster, workload and faults on the
                                virtual clock, every event checked; a failing seed prints how to replay it
  cluster bench [--quick]       measure decisions, the whole path, the bus, actors, fan-out and replay: one table

Run "cluster COMMAND -h" for a command's usage, an example and its flags
("cluster run -h" for the flags of a cluster run).
`

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout))
}

// runMain runs the command args name and returns the exit status; help
// goes to stdout.
func runMain(args []string, stdout io.Writer) int {
	cmd := "run"
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		// cluster --help: every command; cluster run --help: run's flags.
		cmd = "help"
	} else if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = run(args)
	case "submit":
		err = submit(args)
	case "get", "cancel", "explain":
		err = jobCommand(cmd, args)
	case "list":
		err = list(args)
	case "strategy":
		err = strategy(args)
	case "snapshot":
		err = snapshot(args)
	case "chaos":
		err = chaosCommand(args)
	case "node":
		err = nodeCommand(args)
	case "auth":
		err = authCommand(args)
	case "replay":
		if hasFlag(args, "timed") {
			err = timedCommand("replay", args)
		} else if hasValueFlag(args, "pollux") {
			err = polluxCommand(args)
		} else if hasValueFlag(args, "gavel") {
			err = gavelCommand(args)
		} else if hasValueFlag(args, "pal") {
			err = palCommand(args)
		} else {
			err = replayCommand(args)
		}
	case "compare":
		if hasValueFlag(args, "pollux") {
			err = polluxCompareCommand(args)
		} else if hasValueFlag(args, "gavel") {
			err = gavelCompareCommand(args)
		} else if hasValueFlag(args, "pal") {
			err = palCompareCommand(args)
		} else {
			err = timedCommand("compare", args)
		}
	case "bench":
		err = benchCommand(args)
	case "simtest":
		err = simtestCommand(args)
	case "bench-footprint":
		err = footprintCommand(args)
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "cluster: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0 // the help asked for was printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 1
	}
	return 0
}

func newLogger(level string, out zapcore.WriteSyncer) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.Set(level); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
	if out == zapcore.Lock(os.Stderr) {
		enc.EncodeLevel = zapcore.CapitalColorLevelEncoder
	}
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), out, lvl)
	return zap.New(core), nil
}

func run(args []string) error {
	fs := newFlags("cluster run")
	listen := fs.String("listen", cluster.DefaultListen, "HOST:PORT of the embedded NATS server")
	prefix := fs.String("prefix", events.DefaultPrefix, "subject prefix of this cluster")
	gpus := fs.String("gpus", model.DefaultGPUs, "cluster shape: COUNTxMODEL,... (nodes of at most 8 GPUs of one model)")
	clusterFile := fs.String("cluster", "", "cluster file: YAML (see docs/CLUSTERS.md) or an openb node list CSV; overrides --gpus")
	pol := fs.String("policy", policy.DefaultPolicy, "placement policy: "+strings.Join(policy.Names[policy.Policy](), ", "))
	queue := fs.String("queue", policy.DefaultQueue, "queue order: "+strings.Join(policy.Names[policy.QueueSort](), ", "))
	preempt := fs.String("preempt", policy.DefaultPreempt, "preemption rule: fewest-victims (of strictly lower priority) or none")
	filters := fs.String("filter", "", "filters every placement must pass, comma-separated: "+strings.Join(policy.Names[policy.Filter](), ", ")+" (capacity: the compute limit below under any policy)")
	oversubscribe := ratioFlag(1)
	fs.Var(&oversubscribe, "oversubscribe", "binpack, spread, first-fit and smallest-fit fill a GPU's compute to at most this ratio × 100%: 1 (a GPU past 100% slows all its jobs), 2, or inf for no limit")
	roundEvery := fs.Duration("round", 0, "re-allocate every this much simulated time (0: never): running jobs the queue order puts behind waiting ones are preempted (docs/POLICIES.md)")
	roundName := fs.String("round-policy", policy.DefaultRound, "the round's rule (with --round)")
	tenantQueue := fs.Int("tenant-queue", DefaultTenantQueue, "the jobs one tenant may have waiting in the queue; a submission past it is refused on tenant (0: no bound)")
	readersPerAccount := fs.Int("readers-per-account", auth.DefaultReadersPerAccount, "with --auth and a store: the consumers of the event stream each observer's or admin's account may hold; one past it is deleted (0: no bound)")
	nodeMaxGPUs := fs.Int("node-max-gpus", DefaultNodeMaxGPUs, "the GPUs a node joining from elsewhere may have, unless the roles file gives its node user gpus; GPU ids past it are refused (0: no bound)")
	tenantRate := fs.Float64("tenant-rate", DefaultTenantRate, "with --auth: the submissions a second each tenant may make, in bursts of twice as many (0: no limit); a faster one is refused on tenant, saying when to try again")
	nodeBudget := fs.String("node-event-budget", auth.DefaultEventBudget().String(), "with --auth: the events each node of the roles file may publish, RATE/s,BURST[,cool-off=DURATION] (or off); a node past it is shut out for the cool-off (doubled at each repeat, at most 1h), so that it cannot evict the event history")
	limitsText := fs.String("tenant-limits", "", "per-tenant limits, e.g. 'team-a=gpus:8,cpu:64,memory:256GB,priority:medium;*=gpus:4' (the distinct GPUs, CPU cores and memory its running jobs may hold, the highest priority it may submit; * for every other tenant)")
	vramModel := fs.String("vram-model", string(vram.Contiguous), "VRAM model: contiguous or pooled")
	seed := fs.Uint64("seed", 1, "seed of the job generator")
	rate := fs.Float64("rate", jobgen.DefaultRate, "generated jobs per simulated hour (0 turns the generator off, the demo's five first jobs too)")
	speed := fs.Float64("speed", simclock.DefaultSpeed, "simulated seconds per wall second (scaled clock)")
	clockKind := fs.String("clock", "scaled", "scaled (--speed times the wall) or virtual (as fast as the machine allows, repeatable)")
	hours := fs.Float64("hours", 0, "with --clock virtual: stop after this many simulated hours (0: run until interrupted)")
	interference := fs.Float64("interference", model.DefaultInterference, "noisy-neighbour coefficient of co-located jobs (0 turns it off)")
	podsFile := fs.String("pods", "", "replay this openb pod list in time instead of the generated mix (docs/SIMULATION.md)")
	jobsFile := fs.String("jobs", "", "replay this JSON-lines trace (job specs with submit_at) instead of the generated mix")
	demo := fs.Bool("demo", true, "start with the reference demo's five jobs (when --rate > 0), on the GPUs the demo shows them on where the cluster has those")
	starve := fs.Duration("starvation-age", policy.DefaultStarvationAge, "simulated wait after which a head-of-line job holds GPUs")
	observe := fs.Bool("observe", false, "show the live text view in this terminal (logs go to a file)")
	monkey := fs.String("chaos", "", "chaos monkey, seeded by --seed: e.g. 'kill=2/h,hang=1/h,partition=1/h' (rates per simulated\n"+
		"hour; also delay=, drop=, kill-scheduler= rates, for=DURATION of hangs and partitions, until=DURATION to stop drawing faults)")
	lease := fs.Duration("lease", scheduler.DefaultLease, "wall time a GPU may go unrenewed before the scheduler declares it dead\n"+
		"(with --clock virtual: simulated time, default 12m, and only with --chaos)")
	heartbeat := fs.Duration("heartbeat", 0, "period of node heartbeats (default: a third of --lease, at most 2s; with --clock virtual 4m)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	dataDir := fs.String("data-dir", defaultDataDir(), "JetStream store directory: the job journal and the event stream survive restarts here")
	fresh := fs.Bool("fresh", false, "start empty: delete the job journal and event stream a previous run left in the store (after a clean stop the next run starts empty anyway)")
	resume := fs.Bool("resume", false, "take up the run the store holds even if it was stopped cleanly (a crashed run is taken up without it)")
	memory := fs.Bool("memory", false, "keep the job journal and events in memory only (a throwaway run: nothing survives the process)")
	noJournal := fs.Bool("no-journal", false, "no JetStream at all: no job journal (a scheduler crash loses the queue) and no event history; the fastest, see docs/PERFORMANCE.md")
	eventsAge := fs.Duration("events-max-age", durable.DefaultEventsMaxAge, "keep events this long (observer log --since; 0: no age limit)")
	eventsBytes := fs.String("events-max-bytes", "1GiB", "keep at most this much of the event stream, oldest dropped first (0: no size limit)")
	replicas := fs.Int("replicas", 1, "with --nats on a NATS cluster: replicas of the job journal and the event stream (3 survives a server's loss)")
	noGPUs := fs.Bool("no-gpus", false, "control plane only: no local GPUs; GPU nodes join with 'cluster node'")
	standby := fs.Bool("standby", false, "with --nats and a store: a standby control plane that takes over when the active one renews nothing for three quarters of a lease (no GPUs, no generator)")
	trainingData := fs.String("training-data", "", "a Pollux data folder (like ../shared/traces/pollux): the cluster then runs distributed training jobs\n"+
		"(submissions with \"training\"), decided every 60 simulated seconds by --training-policy over the GPUs no other kind\n"+
		"of job holds (--rate 0 leaves them all to training jobs)")
	throughputs := fs.String("throughputs", "", "a throughput table (Gavel's data/simulation_throughputs.json, or a file in its shape): the GPUs run typed jobs\n"+
		"(a job_type and steps) at its rates for their model, packed pairs at the pair's; without it typed jobs are refused")
	variability := fs.String("variability", "", "a variability profile (CSV: GPU_ID and a PerfVar_<class> column per application class, as the PAL data's\n"+
		"profile_seed42.csv or what cluster replay --pal --out writes): each GPU, in the cluster's order, runs a job with that perf_class\n"+
		"at its own pace, and a gang at its slowest GPU's")
	locality := fs.Float64("locality-penalty", 1, "with --variability: the multiplier on the iteration time of a perf_class job whose GPUs span nodes (PAL's: 1.7; 1: none)")
	trainingPolicy := fs.String("training-policy", "tiresias", "with --training-data: "+strings.Join(policy.Names[pollux.Maker](), ", ")+" (pollux's search drawn from seed 1)")
	authPath := fs.String("auth", "", "roles file (or the directory 'cluster auth init' wrote): every client authenticates and gets its role's permissions")
	insecure := fs.Bool("insecure", false, "let --listen reach beyond loopback without --auth (anyone who reaches the port may do anything)")
	var busOpt bus.Options
	busOpt.AddFlags(fs, "", "use this NATS server or cluster (URLs, comma-separated) instead of the embedded server")
	fs.Lookup("tlscert").Usage = "TLS certificate: the embedded server's (clients then connect with TLS), or with --nats this client's"
	fs.Lookup("tlskey").Usage = "key of --tlscert"
	fs.Lookup("tlsca").Usage = "CA: the embedded server then requires client certificates it signed (mutual TLS); with --nats, the CA of the server's certificate"
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var serverTLS *auth.TLSFiles
	if busOpt.URLs != "" {
		if err := busOpt.Check(); err != nil {
			return err
		}
	} else if busOpt.TLSCert != "" || busOpt.TLSKey != "" || busOpt.TLSCA != "" {
		if busOpt.TLSCert == "" || busOpt.TLSKey == "" {
			return fmt.Errorf("--tlscert and --tlskey: the embedded server needs both for TLS (`cluster auth init` writes a self-signed set)")
		}
		if err := busOpt.CheckFiles(); err != nil {
			return err
		}
		serverTLS = &auth.TLSFiles{Cert: busOpt.TLSCert, Key: busOpt.TLSKey, CA: busOpt.TLSCA}
	}
	var roles *auth.File
	if *authPath != "" {
		f, err := auth.LoadDir(*authPath)
		if err != nil {
			return err
		}
		roles = f
	}
	if *tenantRate < 0 {
		return fmt.Errorf("--tenant-rate must not be negative (0: no limit)")
	}
	if *tenantQueue < 0 {
		return fmt.Errorf("--tenant-queue must not be negative (0: no bound)")
	}
	if *nodeMaxGPUs < 0 || *nodeMaxGPUs > auth.MaxNodeGPUs {
		return fmt.Errorf("--node-max-gpus: %d: give 1 to %d GPUs (0: no bound)", *nodeMaxGPUs, auth.MaxNodeGPUs)
	}
	maxBytes, err := parseSize("--events-max-bytes", *eventsBytes)
	if err != nil {
		return err
	}
	if *eventsAge < 0 {
		return fmt.Errorf("--events-max-age must not be negative (0: no limit)")
	}
	if *replicas < 1 || *replicas > 5 {
		return fmt.Errorf("--replicas must be from 1 to 5")
	}
	store := durable.File
	switch {
	case *memory && *noJournal:
		return fmt.Errorf("--memory and --no-journal: choose one (--memory keeps a journal in memory, --no-journal none)")
	case *memory:
		store = durable.Memory
	case *noJournal:
		store = durable.None
	}
	if store == durable.File && busOpt.URLs == "" && *dataDir == "" {
		return fmt.Errorf("--data-dir: no default store directory on this machine (no home directory): give one, or --memory")
	}
	shape, err := model.ParseGPUs(*gpus)
	if *clusterFile != "" {
		shape, err = cluster.LoadShape(*clusterFile)
		if err != nil {
			err = fmt.Errorf("--cluster: %w", err)
		}
	}
	if err != nil {
		return err
	}
	if err := checkSchedulerFlags(*queue, *preempt, *filters, *roundName, *roundEvery); err != nil {
		return err
	}
	defer cluster.TuneGC(shape.GPUCount())()
	limits, err := policy.ParseTenantLimits(*limitsText)
	if err != nil {
		return fmt.Errorf("--tenant-limits: %v", err)
	}
	eventBudget, err := auth.ParseEventBudget(*nodeBudget)
	if err != nil {
		return fmt.Errorf("--node-event-budget: %v", err)
	}
	if _, err := policy.Lookup[policy.Policy](*pol); err != nil {
		return fmt.Errorf("--policy: %v", err)
	}
	vm, err := vram.ParseModel(*vramModel)
	if err != nil {
		return fmt.Errorf("--vram-model: %v", err)
	}
	if *rate < 0 {
		return fmt.Errorf("--rate must not be negative")
	}
	if *speed <= 0 {
		return fmt.Errorf("--speed must be positive (simulated seconds per wall second)")
	}
	if *clockKind != "scaled" && *clockKind != "virtual" {
		return fmt.Errorf("--clock %q: use scaled or virtual", *clockKind)
	}
	if *hours < 0 || (*hours > 0 && *clockKind != "virtual") {
		return fmt.Errorf("--hours: a positive number of simulated hours, with --clock virtual")
	}
	if *interference < 0 {
		return fmt.Errorf("--interference must not be negative")
	}
	if *lease <= 0 {
		return fmt.Errorf("--lease must be positive, e.g. 6s")
	}
	if *clockKind == "virtual" && !flagSet(fs, "lease") {
		// The default is wall time; a virtual run's is simulated
		// (core.DefaultVirtualLease, chosen by the cluster).
		*lease = core.DefaultVirtualLease
	}
	if *heartbeat < 0 || (*heartbeat > 0 && *heartbeat*2 > *lease) {
		return fmt.Errorf("--heartbeat must be positive and at most half of --lease (%s), so one late heartbeat is not a death", *lease)
	}
	var monkeySpec *chaos.MonkeySpec
	if *monkey != "" {
		spec, err := chaos.ParseMonkey(*monkey)
		if err != nil {
			return err
		}
		monkeySpec = &spec
	}
	var source jobgen.Source
	switch {
	case *podsFile != "" && *jobsFile != "":
		return fmt.Errorf("--pods and --jobs: give one trace, not both")
	case *podsFile != "":
		pods, err := openb.ReadPods(*podsFile)
		if err == nil {
			var arrivals []jobgen.Arrival
			if arrivals, err = sim.PodArrivals(pods); err == nil {
				source = jobgen.NewListSource(arrivals)
			}
		}
		if err != nil {
			return fmt.Errorf("--pods: %w", err)
		}
	case *jobsFile != "":
		arrivals, err := sim.ReadJobLines(*jobsFile)
		if err != nil {
			return fmt.Errorf("--jobs: %w", err)
		}
		source = jobgen.NewListSource(arrivals)
	}
	var clock *simclock.Virtual
	epoch := time.Time{}
	if *clockKind == "virtual" {
		epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock = simclock.NewVirtual(epoch)
		if *hours > 0 {
			clock.StopAt(epoch.Add(time.Duration(*hours * float64(time.Hour))))
		}
	}
	if !model.ValidToken(*prefix) {
		return fmt.Errorf("--prefix %q: use letters, digits, - and _ only", *prefix)
	}
	logOut := zapcore.Lock(os.Stderr)
	logPath := ""
	if *observe {
		logPath = filepath.Join(os.TempDir(), "gpusched-cluster.log")
		f, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		logOut = zapcore.Lock(f)
	}
	log, err := newLogger(*logLevel, logOut)
	if err != nil {
		return err
	}
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *standby {
		rateGiven := false
		fs.Visit(func(f *flag.Flag) { rateGiven = rateGiven || f.Name == "rate" })
		if rateGiven && *rate > 0 {
			return errors.New("--standby generates no jobs: leave --rate out")
		}
		*rate = 0 // the generator is the active control plane's
	}
	cfg := cluster.Config{
		Seed:   *seed,
		Logger: log,
		Chaos:  monkeySpec,
		Access: cluster.Access{
			Listen:            *listen,
			Prefix:            *prefix,
			NodeEventBudget:   eventBudget,
			ReadersPerAccount: readersFlag(*readersPerAccount),
			Bus:               busOpt,
			Auth:              roles,
			TLS:               serverTLS,
			Insecure:          *insecure,
		},
		Hardware: cluster.Hardware{
			Shape:        shape,
			VRAMModel:    vm,
			Interference: *interference,
			Lease:        *lease,
			Heartbeat:    *heartbeat,
			NoGPUs:       *noGPUs,
		},
		Scheduling: cluster.Scheduling{
			Policy:        *pol,
			Queue:         *queue,
			Preempt:       *preempt,
			Filters:       *filters,
			Oversubscribe: float64(oversubscribe),
			Round:         *roundName,
			RoundEvery:    *roundEvery,
			StarvationAge: *starve,
		},
		Admission: cluster.Admission{
			TenantLimits: limits,
			TenantRate:   *tenantRate,
			TenantBurst:  int(2 * *tenantRate),
			TenantQueue:  *tenantQueue,
			NodeMaxGPUs:  *nodeMaxGPUs,
		},
		Arrivals: cluster.Arrivals{
			Rate:    *rate,
			Demo:    *demo,
			PinDemo: *demo,
			Source:  source,
		},
		Timing: cluster.Timing{Speed: *speed},
		Durability: cluster.Durability{
			Store:   store,
			DataDir: *dataDir,
			Standby: *standby,
			Fresh:   *fresh,
			Resume:  *resume,
			Durable: durable.Options{Replicas: *replicas, EventsMaxAge: noLimit(*eventsAge), EventsMaxBytes: noLimit(maxBytes)},
		},
	}
	if *trainingData != "" {
		if cfg.Training, err = trainingConfig(*trainingData, *trainingPolicy); err != nil {
			return err
		}
	}
	if *throughputs != "" {
		if cfg.Throughputs, err = model.LoadThroughputs(*throughputs); err != nil {
			return fmt.Errorf("--throughputs: %w", err)
		}
	}
	if *variability != "" {
		profile, err := model.ReadVariability(*variability)
		if err != nil {
			return fmt.Errorf("--variability: %w", err)
		}
		if err := cfg.Shape.SetVariability(profile); err != nil {
			return fmt.Errorf("--variability: %w (the cluster's GPUs, node by node: --gpus or --cluster)", err)
		}
	}
	if !(*locality >= 1) || math.IsInf(*locality, 0) {
		return fmt.Errorf("--locality-penalty: %v is not a multiplier of at least 1 (1 is none; PAL's is 1.7)", *locality)
	}
	cfg.LocalityPenalty = *locality
	wallStart := time.Now()
	if clock != nil {
		cfg.Clock, cfg.Epoch = clock, epoch
	}
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		return err
	}
	log.Info("running; Ctrl-C stops", zap.String("nats", c.URL()), zap.String("clock", *clockKind), zap.Float64("speed", *speed),
		zap.Float64("rate_per_sim_hour", *rate), zap.Uint64("seed", *seed), zap.String("policy", *pol))
	if clock != nil && *hours > 0 {
		// A virtual run with an end stops the process when the clock does.
		go func() {
			select {
			case <-clock.Done():
				log.Info("virtual run reached its end", zap.Float64("simulated_hours", *hours),
					zap.Duration("wall", time.Since(wallStart)), zap.Uint64("instants", clock.Fired()))
				stop()
			case <-ctx.Done():
			}
		}()
	}
	if *observe {
		nc, err := c.Client("observer", nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err == nil {
			subjects := events.NewSubjects(*prefix)
			if term.IsTerminal(int(os.Stdout.Fd())) && term.IsTerminal(int(os.Stdin.Fd())) {
				if err := tui.Attach(ctx, nc, subjects); err != nil {
					fmt.Fprintln(os.Stderr, "dashboard:", err)
				}
			} else {
				observer.Text(ctx, nc, subjects, os.Stdout, observer.TextOptions{})
			}
			nc.Close()
		}
		fmt.Fprintf(os.Stderr, "\nstopping; the cluster's log is in %s\n", logPath)
	} else {
		<-ctx.Done()
	}
	log.Info("shutting down")
	c.Stop()
	log.Info("stopped")
	return nil
}

// clientFlags are the flags every client command shares: the bus (URL,
// credentials, TLS) and the prefix.
func clientFlags(fs *flag.FlagSet) (*bus.Options, *string) {
	var o bus.Options
	o.AddFlags(fs, "nats://"+cluster.DefaultListen, "NATS URL of the cluster")
	prefix := fs.String("prefix", events.DefaultPrefix, "subject prefix of the cluster")
	return &o, prefix
}

// request sends body to the cluster and prints the reply; an error reply
// becomes the command's error.
func request(o *bus.Options, subject string, body any, out io.Writer) error {
	c, err := dial(o, "")
	if err != nil {
		return err
	}
	defer c.nc.Close()
	var raw json.RawMessage
	if err := c.call(subject, body, &raw); err != nil {
		return err
	}
	return printJSON(out, raw)
}

func submit(args []string) error {
	url, prefix, body, err := submitRequest(args)
	if err != nil {
		return err
	}
	// A submission that timed out may have been accepted: it is sent again
	// with the same job id, which the scheduler answers as the first
	// (never a second job).
	for attempt := 1; attempt <= submitAttempts; attempt++ {
		if err = request(url, events.NewSubjects(prefix).JobSubmit(), body, os.Stdout); !errors.Is(err, nats.ErrTimeout) {
			return err
		}
		fmt.Fprintf(os.Stderr, "no answer (attempt %d of %d); sending it again with the same job id %s\n", attempt, submitAttempts, body.JobID)
	}
	return err
}

// submitRequest reads `cluster submit`'s flags into the submission it
// sends. A field whose flag is not given is left out, so the scheduler's
// default applies (util is gpu_milli/10 when only --gpu-milli is given).
func submitRequest(args []string) (*bus.Options, string, events.SubmitRequest, error) {
	fs := newFlags("cluster submit")
	url, prefix := clientFlags(fs)
	name := fs.String("name", "", "job name (required)")
	tenant := fs.String("tenant", "", "tenant")
	priority := fs.String("priority", "medium", "high, medium, low or an integer")
	gpus := fs.Int("gpus", 1, "GPUs (more than 1: a gang on one node; 0: CPU only)")
	vramSize := fs.String("vram", "", "VRAM per GPU with its unit, e.g. 12GB or 512MB (a GB is 2^30 bytes, as on the GPU) (required)")
	util := fs.Float64("util", 0, "compute share per GPU, percent (default 100, or gpu-milli/10)")
	milli := fs.Float64("gpu-milli", 0, "share of each GPU the job reserves, in thousandths (1-1000; default: the share its VRAM takes)")
	cpu := fs.Float64("cpu", events.DefaultCPU, "CPU cores the job holds on its node")
	memory := fs.String("memory", model.Bytes(events.DefaultMemory).String(), "host memory the job holds on its node, with its unit, e.g. 64GB")
	duration := fs.String("duration", "", "run time at reference speed, e.g. 30m (required)")
	checkpoint := fs.String("checkpoint", "", "checkpoint interval, e.g. 10m")
	models := fs.String("models", "", "allowed GPU models, comma-separated")
	gpu := fs.String("gpu", "", "pin to this GPU id")
	node := fs.String("node", "", "pin to this node")
	preemptible := fs.Bool("preemptible", true, "may be preempted by higher-priority jobs")
	jobID := fs.String("job-id", "", "the job's id, an idempotency key (default: a new UUID); a retry with the same id is the same job")
	trainingApp := fs.String("training-app", "", "a distributed training job of this application (cifar10, bert, ...; a cluster run with --training-data):\n"+
		"its model says when it completes, so no --vram, --duration or --gpus")
	jobType := fs.String("job-type", "", "a typed job of this type, as the cluster's throughput table names it (a cluster run with --throughputs):\n"+
		"it runs --steps steps at the table's rate on its GPU model, so no --duration; --gpus is its scale factor")
	steps := fs.Float64("steps", 0, "with --job-type: the steps the job runs to complete")
	trainingBatch := fs.Int("training-batch", 0, "with --training-app: the batch size")
	trainingReplicas := fs.Int("training-replicas", 0, "with --training-app: the replicas (one whole GPU each, over any nodes)")
	if err := fs.Parse(args); err != nil {
		return nil, "", events.SubmitRequest{}, err
	}
	if fs.NArg() > 0 {
		return nil, "", events.SubmitRequest{}, fmt.Errorf("cluster submit takes flags only, not %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *jobID == "" {
		*jobID = uuid.NewString()
	}
	body := events.SubmitRequest{JobID: *jobID, Name: *name, Tenant: *tenant, Preemptible: preemptible,
		Duration: *duration, Checkpoint: *checkpoint, GPU: *gpu, Node: *node}
	if given["gpus"] || *trainingApp == "" {
		body.GPUs = gpus
	}
	if *trainingApp != "" {
		body.Training = &model.Training{App: *trainingApp, Batch: *trainingBatch, Replicas: *trainingReplicas}
	} else if given["training-batch"] || given["training-replicas"] {
		return nil, "", body, errors.New("--training-batch and --training-replicas go with --training-app")
	}
	p, err := model.ParsePriority(*priority)
	if err != nil {
		return nil, "", body, fmt.Errorf("--priority: %v", err)
	}
	body.Priority = &p
	if given["util"] {
		body.Util = util
	}
	if *jobType != "" || given["steps"] {
		body.JobType = *jobType
		if given["steps"] {
			body.Steps = steps
		}
	}
	if given["gpu-milli"] {
		body.GPUMilli = milli
	}
	if given["cpu"] {
		body.CPU = cpu
	}
	for _, f := range []struct {
		flag string
		size *string
		into **events.Size
	}{{"vram", vramSize, &body.VRAM}, {"memory", memory, &body.Memory}} {
		if !given[f.flag] {
			continue
		}
		v, err := model.ParseBytes(*f.size)
		if err != nil {
			return nil, "", body, fmt.Errorf("--%s: %v", f.flag, err)
		}
		*f.into = events.SizeOf(v)
	}
	if *models != "" {
		body.Models = strings.Split(*models, ",")
	}
	return url, *prefix, body, nil
}

// submitAttempts is how many times `cluster submit` sends a submission
// that is not answered in time.
const submitAttempts = 3

// chaosUsage is the usage line of cluster chaos.
const chaosUsage = "usage: cluster chaos kill|hang|partition|delay|drop GPU_ID [--node NODE] [--duration D] [--delay D] [--drop F] [--seed N]\n" +
	"       cluster chaos kill-scheduler|failover-scheduler\n" +
	"       cluster chaos hang-scheduler|partition-scheduler --duration D"

func chaosCommand(args []string) error {
	if len(args) == 0 {
		return errors.New(chaosUsage)
	}
	action := args[0]
	if action == "-h" || action == "--help" || action == "-help" || action == "help" {
		fmt.Fprintf(os.Stderr, "%s\n\nactions: %s\n", chaosUsage, strings.Join(events.ChaosActions, ", "))
		return nil
	}
	known := false
	for _, a := range events.ChaosActions {
		known = known || a == action
	}
	if !known {
		return fmt.Errorf("cluster chaos: unknown action %q\n%s", action, chaosUsage)
	}
	fs := newFlags("cluster chaos " + action)
	url, prefix := clientFlags(fs)
	node := fs.String("node", "", "the GPU's node, where GPU ids repeat across nodes")
	duration := fs.String("duration", "", "hang, partition: how long (wall time); delay, drop: how long (default: until cleared)")
	delay := fs.String("delay", "", "delay: the added latency of the GPU actor's messages")
	drop := fs.String("drop", "", "drop: the fraction of the GPU actor's messages lost, 0 to 1")
	seed := fs.Uint64("seed", 0, "drop: seed of the draws")
	reason := fs.String("reason", "", "why (shows in the logs and events)")
	var gpu string
	rest := args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		gpu, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if gpu == "" && fs.NArg() == 1 {
		gpu = fs.Arg(0)
	}
	if gpu == "" && !events.SchedulerChaos(action) {
		return errors.New(chaosUsage)
	}
	req := events.ChaosRequest{GPU: gpu, Node: *node, Duration: *duration, Delay: *delay, Seed: *seed, Reason: *reason}
	if *drop != "" {
		f, err := strconv.ParseFloat(*drop, 64)
		if err != nil {
			return fmt.Errorf("--drop %q: a fraction from 0 to 1", *drop)
		}
		req.Drop = &f
	}
	// Checked here first, so a mistake reads as a flag, not a field.
	if fe := chaos.Validate(action, req); fe != nil {
		return fmt.Errorf("cluster chaos %s: --%s: %s", action, strings.ReplaceAll(fe.Field, "_", "-"), fe.Message)
	}
	return request(url, events.NewSubjects(*prefix).Chaos(action), req, os.Stdout)
}

func strategy(args []string) error {
	fs := newFlags("cluster strategy")
	url, prefix := clientFlags(fs)
	queue := fs.String("queue", "", "switch the queue order too: "+strings.Join(policy.Names[policy.QueueSort](), ", "))
	filters := fs.String("filter", "", "switch the filters too, comma-separated ("+strings.Join(policy.Names[policy.Filter](), ", ")+"; none clears them)")
	var oversubscribe ratioFlag
	fs.Var(&oversubscribe, "oversubscribe", "switch the oversubscription ratio too: 1 keeps every GPU within its compute, 2 lets it reach 200%, inf no limit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	req := events.StrategyRequest{Queue: *queue, Filters: *filters}
	if oversubscribe != 0 {
		r := events.Ratio(oversubscribe)
		req.Oversubscribe = &r
	}
	if fs.NArg() > 0 {
		req.Policy = fs.Arg(0)
	}
	return request(url, events.NewSubjects(*prefix).SchedStrategy(), req, os.Stdout)
}

// ratioFlag is an oversubscription ratio on the command line: a number
// at least 1, or inf.
type ratioFlag float64

func (r *ratioFlag) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }

func (r *ratioFlag) Set(s string) error {
	f, err := events.ParseRatio(s)
	if err == nil {
		err = policy.CheckOversubscribe(f)
	}
	if err != nil {
		return err
	}
	*r = ratioFlag(f)
	return nil
}

// readersFlag is --readers-per-account as the cluster's configuration
// takes it: 0 there is the default, and no bound is negative.
func readersFlag(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// DefaultNodeMaxGPUs is the GPUs a node joining from elsewhere may have
// unless --node-max-gpus or the roles file says otherwise: four times the
// largest server sold (16 GPUs), far below the 1,024 a heartbeat may name.
const DefaultNodeMaxGPUs = 64

// DefaultTenantQueue is the jobs one tenant may have waiting unless
// --tenant-queue says otherwise: far more than a team queues by hand or a
// sweep submits, far fewer than grow the scheduler's every pass (and its
// memory) without bound.
const DefaultTenantQueue = 10000

// DefaultTenantRate is the submissions a second a tenant of an
// authenticated bus may make unless --tenant-rate says otherwise: far above
// what a person or a training pipeline submits, far below what floods the
// scheduler (20,000 in 5 s were all accepted before).
const DefaultTenantRate = 200

// defaultDataDir is the per-user store directory: $XDG_STATE_HOME/gpusched,
// else ~/.local/state/gpusched (empty when there is no home directory).
func defaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "gpusched")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".local", "state", "gpusched")
}

// parseSize reads a byte size such as 1GiB, 500MB or 0.
func parseSize(flagName, s string) (int64, error) {
	if strings.TrimSpace(s) == "0" {
		return 0, nil
	}
	b, err := model.ParseBytes(s)
	if err != nil || b < 0 {
		return 0, fmt.Errorf("%s %q: a size such as 1GiB or 500MB (0: no limit)", flagName, s)
	}
	return int64(b), nil
}

// noLimit turns a flag's 0 ("no limit") into durable.Options' negative.
func noLimit[T int64 | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// flagSet reports whether the command line gave the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
