// Package ledger is the client logic of BookKeeper-style ledgers as pure
// state machines: where a ledger's entries go, how an entry becomes
// acknowledged, how the LAC advances, how failed bookies are replaced, how
// a new owner fences the old writer and recovers the ledger's end, and how
// readers stay below the LAC. The reference is
// docs/bookkeeper-protocol.md §§1-4 and Appendix A.
//
// Nothing here touches a socket, a clock, a goroutine or global
// randomness. The driver (ledgerclient) feeds inputs (answers from bookies,
// results of metadata writes, ticks) and carries out the work each machine
// hands back as a Ready. A simulator does the same from a seed
// (sim_test.go), which is how every rule below is tested.
//
// # Machines
//
//	Writer     Append / Close of a ledger this client created (docs/bookkeeper-protocol.md §2)
//	Recovery   open with recovery: fence, find the end, re-add, close (§4.1)
//	Reader     entries First..Last, never beyond the LAC (§3.2)
//	LACReader  the LAC of an open ledger, with ensemble coverage (§3.3)
//	Tailer     long-polls the LAC and delivers every entry once, in order
//
// Placement holds the striping and quorum arithmetic they share (§1.1,
// §1.5). Metadata is this package's view of the ledger metadata; the
// driver converts it to and from the store's format (ledger must not import
// the metadata package).
//
// # Driving a machine
//
// After every input (a Handle* call, Tick, Append, Close), call Ready and
// carry out the batch:
//
//  1. MetadataWrite: start the compare-and-set, expecting
//     Metadata.Version. When it lands, call HandleMetadataWritten with the
//     new version. When it fails for any reason (version conflict, lost
//     connection, expired session: the outcome may be unknown), re-read
//     the metadata and call HandleMetadata with what is stored; the machine
//     recognises its own write if it landed after all. A machine has at
//     most one metadata write in flight.
//  2. Adds and Reads: send each to its bookie (AddRequest.Request,
//     ReadRequest.Request build the v3 messages). Feed exactly one answer
//     per request: HandleAdd with the status, HandleRead with ReadReplyOf
//     the response, or status NoResponse after the driver's timeout or a
//     broken connection. No answer may be fed twice, and answers may come in
//     any order. The machines never put two identical requests in flight
//     to one bookie, so matching by (bookie, operation, entry) is safe.
//  3. Completions and Entries: hand them to the application in slice
//     order; they are already in entry order.
//  4. RefreshMetadata: re-read the metadata, then HandleMetadata.
//  5. Done: the operation is over; the machine emits nothing more.
//
// Nothing in a batch depends on another item of the same batch being
// carried out first: the Writer sends nothing to a replacement bookie until
// the ensemble change naming it is stored, so adds never run ahead of the
// metadata they rely on. Tick drives every delay (speculative reads,
// retries of unknown answers); the driver chooses the tick length (the
// defaults assume 100 ms). Writer.BookieFailed reports a dead connection
// without waiting for each request's timeout.
//
// # Rules the machines keep
//
// Writer (docs/bookkeeper-protocol.md §2.2-2.4, invariants I2-I4):
//   - Entry e goes to ensemble positions (e+k) mod E, k < Qw, of the last
//     segment; its body carries the LAC at the time of Append and the
//     cumulative length.
//   - An entry completes when Qa bookies now at its write-set positions
//     acknowledged it and every lower entry completed: completions and LAC
//     move strictly in entry order, one entry at a time.
//   - On a bookie failure the writer proposes a segment starting at LAC+1
//     with the failed positions replaced (chosen by the PlacementPolicy,
//     with the seeded rng, from writable bookies outside the ensemble;
//     docs/bookkeeper-protocol.md §8.6). Until the driver reports it
//     stored, the LAC and completions are frozen and nothing is sent to the
//     replacements. Once stored, unacknowledged entries are re-sent to the
//     replaced positions only; acks from the bookies that left no longer
//     count.
//   - EFENCED, or metadata found IN_RECOVERY or CLOSED, finishes the
//     writer. Pending adds fail with ErrOutcomeUnknown (they may be in the
//     ledger) and the cause.
//   - Close waits for pending adds, then writes CLOSED with LastEntryID =
//     LAC and the length up to it; finding the same end already stored is
//     success.
//
// Recovery (docs/bookkeeper-protocol.md §4.1): see the Recovery type. Its forward reads and its
// fence reads all carry FENCE_LEDGER and the master key; unknown answers
// are retried, never counted as absent; re-adds carry RECOVERY_ADD.
//
// Readers (docs/bookkeeper-protocol.md §3): an entry is read from one replica at a time, the next
// replica being asked after SpeculativeTicks or at once after an error or a
// bad digest. Nothing above the LAC (open) or LastEntryID (closed) is ever
// requested or delivered. A LAC is always a header LAC, a bookie's maxLAC
// or an explicit LAC, never an entry id.
//
// # Appendix A pitfalls
//
// 1-7 and 10 are the client's: each is ruled out by construction as noted
// on the types above and has a named scenario test (TestPitfall1... to
// TestPitfall10...) in pitfalls_test.go that the simulator runs with the
// faults that expose it, besides the seed sweep TestSimulation. 8
// (checkpoint ordering) and 9 (GC) are the bookie's; the simulated bookies
// keep the contract 8 protects (an acknowledged entry and a fence survive a
// crash, an unacknowledged add may not; TestPitfall8_BookieCrashes), and
// nothing in this package deletes data.
//
// One rule goes beyond BookKeeper's protocol (docs/bookkeeper-protocol.md): recovery re-adds carry LAC_r, the LAC
// recovery started from, in their LAC field, not the recovering client's
// running LAC. Two recoveries can close at different points (one finds an
// unacknowledged entry the other declares absent); with running LACs the
// loser could teach bookies a LAC above the winner's end, and a tailer
// that has not yet seen the close would read past it
// (TestConcurrentRecoveriesNeverExposeBeyondTheEnd).
package ledger
