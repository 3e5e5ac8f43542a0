// Package durable owns what the cluster keeps in NATS JetStream: the job
// journal (a key-value bucket with one record per accepted job, plus the
// scheduler's incarnation) from which a restarted scheduler — or a whole
// restarted process — rebuilds its queue and job states, and the event
// stream that keeps the cluster's events (bounded by age and size) so an
// observer can replay history and catch up after a restart. It knows
// nothing of scheduling: the scheduler writes records and reads them back.
package durable
