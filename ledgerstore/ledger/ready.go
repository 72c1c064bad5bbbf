package ledger

// Ready is a batch of work a state machine hands its driver. Every state
// machine in this package accumulates one from its inputs; Ready() returns
// it and starts a new one. See the package comment for the order in which
// to carry it out.
type Ready struct {
	// MetadataWrite, when not nil, asks for a compare-and-set of the
	// ledger's metadata. Answer with HandleMetadataWritten (it landed) or
	// HandleMetadata (it did not, or its outcome is unknown: re-read and
	// pass the current value).
	MetadataWrite *MetadataWrite
	// Adds are sent to their bookies; answer each with HandleAdd.
	Adds []AddRequest
	// LACWrites are sent to their bookies (Writer only); their answers
	// are not fed back.
	LACWrites []LACWriteRequest
	// Reads are sent to their bookies; answer each with HandleRead.
	Reads []ReadRequest
	// Completions are add outcomes (Writer only), strictly in entry order.
	Completions []Completion
	// Entries are read entries (Reader, Tailer), strictly in entry order,
	// each exactly once.
	Entries []Entry
	// RefreshMetadata asks the driver to re-read the ledger's metadata and
	// pass it to HandleMetadata (a Tailer that suspects its copy is stale).
	RefreshMetadata bool
	// Done, when not nil, reports that the operation finished; the state
	// machine emits nothing afterwards.
	Done *Outcome
	// Stats counts events since the last Ready for the driver's metrics;
	// the driver needs to do nothing else about them.
	Stats Stats
}

// Stats are events a state machine reports for the client's figures
// (docs/observability.md, "BookKeeper"). The state machines read no clock:
// they count, and the driver adds the counts to its metrics.
type Stats struct {
	// DigestMismatches counts copies of entries a bookie answered EOK that
	// failed verification (BookKeeper's READ_ENTRY_DM): reads, tails and
	// recovery's forward reads.
	DigestMismatches int
	// UnderReplicatedAdds counts failed answers (errors and no answer)
	// from a bookie still at its write-set position for an entry already
	// acknowledged: the entry completed with fewer than Qw copies
	// (ADD_ENTRY_UR).
	UnderReplicatedAdds int
	// NotAdhering counts replacement ensembles that do not meet the
	// placement policy (PlacementPolicy.Adheres), as BookKeeper's bookie
	// watcher counts them
	// (bookie_watcher_ENSEMBLE_NOT_ADHERING_TO_PLACEMENT_POLICY_TOTAL).
	NotAdhering int
}

// add adds o's counts to s.
func (s *Stats) add(o Stats) {
	s.DigestMismatches += o.DigestMismatches
	s.UnderReplicatedAdds += o.UnderReplicatedAdds
	s.NotAdhering += o.NotAdhering
}

// Empty reports whether rd holds no work.
func (rd *Ready) Empty() bool {
	return rd.MetadataWrite == nil && len(rd.Adds) == 0 && len(rd.LACWrites) == 0 && len(rd.Reads) == 0 &&
		len(rd.Completions) == 0 && len(rd.Entries) == 0 && !rd.RefreshMetadata && rd.Done == nil &&
		rd.Stats == Stats{}
}

// take returns the batch and resets rd.
func (rd *Ready) take() Ready {
	out := *rd
	*rd = Ready{}
	return out
}

// MetadataWrite asks the driver to store Metadata if the stored version is
// still Metadata.Version (a compare-and-set, docs/bookkeeper-protocol.md §5.5). At most one is in
// flight per state machine.
type MetadataWrite struct {
	Metadata Metadata
}

// Completion is the outcome of one Append. Err is nil when the entry is
// acknowledged: Qa bookies of its write set stored it and every earlier
// entry is acknowledged. A failed add whose Err matches ErrOutcomeUnknown
// may still be in the ledger.
type Completion struct {
	EntryID int64
	Err     error
}

// Entry is one entry a reader delivers.
type Entry struct {
	EntryID int64
	Length  int64  // the ledger's cumulative payload bytes up to this entry
	Payload []byte // aliases the reply body it was decoded from
}

// Outcome is how an operation ended. Err is nil on success. Metadata is
// the ledger's final metadata for a Writer's close and for Recovery; LAC is
// the result of a LACReader.
type Outcome struct {
	Err      error
	Metadata Metadata
	LAC      int64
	// RecoveryReads and RecoveryAdds are, for Recovery, the entries it
	// read forward and handed to its re-adds, and the re-adds that reached
	// Qa (BookKeeper's LEDGER_RECOVER_READ_ENTRIES and
	// LEDGER_RECOVER_ADD_ENTRIES), whether it succeeded or not.
	RecoveryReads, RecoveryAdds int64
}
