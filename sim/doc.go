// Package sim is a deterministic simulator of the whole order lifecycle:
// isolates running intake.Service over KV (with its stale reads, lagging
// lists and per-key write rate) or the Durable Object ledger, clients that
// retry, give up and reuse keys, an OMS that fails before and after it
// acts, the settler's queue, sweeps and alarms, dying isolates and time
// jumps across every TTL. One stream of choices drives a history, so a
// seed replays it event for event, and every history is checked against
// the lifecycle's invariants (check.go). Only tests use it.
package sim
