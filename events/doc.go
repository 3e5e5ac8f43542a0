// Package events owns the bus contract of gpusched: every subject, the
// CloudEvents envelope, and every payload. It is the public API of a
// cluster; a change here is a change to that API and bumps SchemaVersion.
//
// # Subjects
//
// A prefix (default "gpusched", --prefix to change it) namespaces one
// cluster; <p> below stands for it. All bodies are JSON.
//
// Requests (request/reply; any NATS client can send them):
//
//	<p>.job.submit        job spec → {"job_id","state"} (state "placed" or "queued")
//	<p>.job.get           {"job_id"} → JobInfo with "history"
//	<p>.job.cancel        {"job_id"} → JobInfo (state "cancelled")
//	<p>.job.list          {"state","tenant","page"} (all optional) → {"jobs","page","pages","total"}, 100 a page
//	<p>.sched.strategy    {} → {"policy","available","queue","queues"}; {"policy":"spread"} switches the placement
//	                      policy and adds "previous"; {"queue":"las"} switches the queue order (QueueSort) and
//	                      adds "previous_queue"; both may be given (applied together or not at all)
//	<p>.sched.explain     {"job_id"} → Decision: candidates and scores, refusals, victims, or the pending reason
//	<p>.cluster.snapshot  {"page":N} → Snapshot: summary metrics, page N of GPUs, running jobs and queue, "pages"
//	<p>.chaos.kill        {"gpu","node"?,"reason"?} → {"ok","gpu","node","incarnation","lost_jobs"}: the GPU actor
//	                      crashes; its supervisor restarts it empty, after a backoff, as the next incarnation;
//	                      its jobs are lost and re-queued from their last checkpoint
//	<p>.chaos.hang        {"gpu","duration":"30s"} → {"ok","action","gpu","node","incarnation","duration"}: the
//	                      actor freezes (declared dead when its lease runs out; it fences itself on waking)
//	<p>.chaos.partition   {"gpu","duration":"30s"} → the same: the actor is cut off from the bus
//	<p>.chaos.delay       {"gpu","delay":"200ms","duration"?} → its outgoing messages are late ("0s" clears)
//	<p>.chaos.drop        {"gpu","drop":0.2,"duration"?,"seed"?} → that fraction of its messages is lost (0 clears)
//	<p>.chaos.kill-scheduler {} → {"ok","action","incarnation","queued","queued_lost","running","note"}: the
//	                      scheduler restarts, takes its queue back from the job journal ("queued": kept)
//	                      and re-learns running jobs from the GPU actors; without a journal the queued
//	                      jobs are lost ("queued_lost")
//
// Request bodies may be at most 64 KiB (MaxRequestBytes).
//
// On a bus with a roles file (docs/SECURITY.md) who may send each request
// is the NATS server's permissions; a submitter's requests arrive through
// its tenant's account, and the server-set Nats-Request-Info header, not
// the body, says whose: its job.submit gets that tenant, its job.get,
// job.cancel and sched.explain find only that tenant's jobs, its job.list
// and cluster.snapshot show only them. Events are visible to every role.
// Every error, on every request subject, has one shape:
//
//	{"error":{"field":"vram","message":"size \"-3GB\" is negative"}}
//
// where field names the JSON field at fault ("body" for the body as a
// whole). A job that can never fit is answered with such an error and also
// recorded as rejected: its reply carries "job_id" and "state":"rejected".
//
// # Job spec (the body of job.submit)
//
//	name         string, required
//	tenant       string (default "default")
//	priority     "high" (3), "medium" (2, default), "low" (1), or any integer; higher wins
//	gpus         integer: 1 (default), more for a gang on one node, 0 for a CPU-only job
//	vram         per GPU: "20GB", "512MB", "1.5GB" — memory as GPU makers count it, a GB is 2^30
//	             bytes (GiB is accepted, the same unit), so an A100 40GB holds 40GB — or a number
//	             of bytes, at least 1MB (a bare 12 is refused: 12 bytes is surely 12GB);
//	             required for a GPU job unless gpu_milli is given (then that share of each GPU's VRAM)
//	gpu_milli    share of each GPU reserved, in thousandths 1–1000 (the Alibaba trace's unit; 1000
//	             for a gang); shares on a GPU never sum above 1000. Without it a job holds the
//	             share its VRAM is of the GPU. Sets util to gpu_milli/10 unless util is given.
//	util         compute the job uses per GPU, percent 0–100 (default 100); co-located jobs
//	             whose util sums past 100 slow down in proportion
//	duration     run time at reference speed (an A100), Go duration: "4h", "30m"; required
//	models       allowed GPU models, e.g. ["A100-80GB"] or the trace's ["V100M16","T4"]; empty means any
//	preemptible  bool (default true)
//	checkpoint   interval of work between checkpoints, e.g. "10m"; none by default (a preempted job then restarts from zero)
//	cpu          cores (default 4); memory: size (default 16GB), held by the node actor
//	gpu, node    pin the job to one GPU or one node
//	job_type     a typed job: its type as the cluster's throughput table names it (a cluster started
//	             with --throughputs); it runs at the table's rate for the GPU model it lands on (the
//	             packed pair's while it shares a GPU with a typed job the table pairs it with), gpus
//	             is its scale factor, and without vram or gpu_milli it takes whole GPUs
//	steps        with job_type, required: the steps it runs to complete (a whole number ≥ 1); its
//	             progress_s and work_s then count steps, and duration and checkpoint are not given
//
// Unknown fields are errors, so a typo never silently changes a job; so are
// a field given twice, a field name in another case ("Name"), a wrong type
// ("util: must be a number, not a string") and anything after the object.
// Every request subject decodes its body with the same strict decoder
// (DecodeStrict). SubmitRequest is this body as a Go type (the project's
// own clients build it), DecodeSubmit (DecodeSubmitRequest, then SubmitRequest.Job) its decoder; a job's spec as the
// cluster keeps it (Job: in job records and the GPU actors' copies)
// is written in the same form, so it reads back as the same job.
//
// # Events (publish/subscribe)
//
//	<p>.evt.job.<type>               submitted, queued, placed, started, preempted, completed, lost, rejected, cancelled (data: JobInfo)
//	<p>.evt.gpu.<node>.<gpu>.<type>  status (on every change; GPUStatus), up (GPUStatus; "change":"rejoined" after a
//	                                 lost lease), oom (a refused reservation; GPUOOMEvent), down (GPUStatus with
//	                                 "reason" and the jobs it held: from its supervisor after a crash, "change":
//	                                 "crashed", or from the scheduler when its lease expired, "change":"lease-expired")
//	<p>.evt.node.<node>.heartbeat    NodeHeartbeat: the node's CPU and memory and its GPUs' batched liveness;
//	                                 its reply subject asks for leases
//	<p>.evt.node.<node>.up|down      NodeLifecycle, from the scheduler: a node it sees appear ("joined",
//	                                 "rejoined") or whose heartbeats stopped for a lease ("lease-expired")
//	<p>.evt.sched.<type>             decision (Decision), policy (PolicyChanged), pending (Pending: why a job waits),
//	                                 down and up (SchedLifecycle: a scheduler crash and restart, by its supervisor)
//	<p>.evt.chaos.<action>           ChaosEvent: a chaos action, published before it is carried out ("failed"
//	                                 in a second event if the target did not take it)
//	<p>.evt.metrics                  Metrics, every second (wall time; on a virtual clock every simulated
//	                                 minute or --sample): utilisation, jobs, energy, the FGD paper's
//	                                 fragmentation (frag_gpus, frag_ratio, allocation) and VRAM fragmentation
//
// A JobInfo carries, besides the spec and state, first_started_at (its
// first start; started_at is the latest), run_s (simulated seconds run over
// all stints), slowdown (run_s over the time the same work takes alone on
// the same GPUs: 1 means no slowdown from co-location) and lost_work_s
// (work lost to preemptions, redone later).
//
// A job's events follow its lifecycle: submitted → queued → placed →
// started → completed, with started → preempted → queued, started → lost →
// queued, submitted → rejected, queued/started → cancelled. A preempted
// event names the "preemptor" and all "victims" of that preemption.
//
// Every event is a CloudEvents 1.0 structured JSON envelope:
//
//	{"specversion":"1.0","id":"…","source":"/gpu/node-0/gpu-3/1","type":"gpusched.gpu.status",
//	 "time":"…","subject":"gpu-3","datacontenttype":"application/json","dataschemaversion":"1",
//	 "simtime":"…","seq":42,"data":{…}}
//
// source names the actor and its incarnation; seq counts from 1 per
// source, so a restarted actor starts a new sequence and an observer can
// tell a gap from a restart. time is wall time, simtime simulated time.
// subject is the job or GPU the event is about. type is always
// "gpusched.<family>.<type>", whatever the subject prefix.
//
// Every builder has its reader beside it, so that no other package spells
// a subject or a type: Subjects.Service and ParseService for the request
// subjects (Services; Service.ForTenants for what a tenant may ask),
// ParseGPUCtl, ParseNodeSubject, ParseGPUEvent, HeartbeatNode, EventNode,
// IsEvent, IsGPUEvent, IsNodeEvent and IsChaos for the others, Type and
// ParseType (JobEventType) for event types.
//
// Every body is a named type here, the envelope included (Decoded with its
// data raw; Envelope[T] and DataOf[T] decoded in one pass). The wire is
// JSON, written and read with two libraries of one API: the paths every
// message of a run crosses (the scheduler's core and shell, the GPU and
// node actors, the journal, the simulation's collector and the checker)
// use goccy/go-json, because encoding/json's decoding was 11–15 % of a
// simtest run's CPU in the profiles docs/notes/simtest-times.md records;
// the rest use encoding/json. Request bodies are read by one more, the
// strict decoder (DecodeStrict, go-json-experiment/json): it refuses a
// field given twice and matches names by case, which neither of the
// others can be made to do.
//
// # Control subjects (scheduler → actors)
//
//	<p>.node.<node>.ctl       Control{op: reserve|commit|abort|release, job_id, cpu, memory, ttl_ms} → ControlReply
//	<p>.node.<node>.lease     LeaseGrant (the scheduler's answer to a heartbeat): GPUs whose lease is renewed
//	<p>.gpu.<node>.<gpu>.ctl  Control{op: reserve|commit|abort|preempt|release|describe|kill|chaos, job_id, job,
//	                          ttl_ms, jobs, reason, chaos, with_specs} → ControlReply
//	<p>.sched.ctl             Control{op: kill|chaos, reason, chaos} → SchedLifecycle (chaos.kill-scheduler,
//	                          hang-scheduler, partition-scheduler and failover-scheduler send it)
//
// A placement reserves at the node actor and every GPU actor it uses (in
// parallel), then commits; a refusal ("insufficient VRAM", "fragmented
// VRAM: …", "insufficient CPU") or timeout aborts the reservations made.
// Uncommitted reservations expire after ttl_ms of wall time. These subjects
// are internal but documented, so a node process in another language could
// implement them.
package events
