package ledger

import "keeper/ledgerstore/bkproto"

// NoResponse is the status a driver reports for a request that got no
// answer: a timeout, a dropped request, a broken connection. It is never
// sent on the wire. Every state machine treats it as "unknown", never as a
// negative (docs/bookkeeper-protocol.md Appendix A, pitfall 1).
const NoResponse bkproto.StatusCode = -1

// HighPriority is the header priority of recovery adds and reads, as the
// Java client sends it.
const HighPriority uint32 = 100

// AddRequest is one add of one entry to one bookie. The state machines
// never put two identical AddRequests in flight at once (Appendix A,
// pitfall 10), so a driver may match answers by (Bookie, EntryID).
type AddRequest struct {
	Bookie    BookieID
	LedgerID  int64
	EntryID   int64
	MasterKey [bkproto.MasterKeyBytes]byte
	// Body is the entry's stored form (bkproto.EncodeEntry), shared by the
	// write set's requests: read-only.
	Body []byte
	// Recovery sets RECOVERY_ADD: a fenced bookie accepts the add (docs/bookkeeper-protocol.md
	// §4.1 step 6; Appendix A, pitfall 6). Only recovery sets it.
	Recovery bool
}

// Request returns the v3 request for r with the given transaction id. The
// request and everything it points to but the body are one allocation: a
// driver builds one per add it sends.
func (r AddRequest) Request(txnID uint64) *bkproto.Request {
	a := &addRequestAlloc{ledgerID: r.LedgerID, entryID: r.EntryID, key: r.MasterKey}
	a.hv.fill(&a.hdr, bkproto.OperationType_ADD_ENTRY, txnID)
	a.add.LedgerId, a.add.EntryId, a.add.MasterKey, a.add.Body = &a.ledgerID, &a.entryID, a.key[:], r.Body
	if r.Recovery {
		a.flag = bkproto.AddRequest_RECOVERY_ADD
		a.add.Flag = &a.flag
		a.hv.priority = HighPriority
		a.hdr.Priority = &a.hv.priority
	}
	a.req.Header, a.req.AddRequest = &a.hdr, &a.add
	return &a.req
}

// headerVals are the values a request header built by Request points to.
type headerVals struct {
	version  bkproto.ProtocolVersion
	op       bkproto.OperationType
	txn      uint64
	priority uint32
}

// fill makes h a v3 header of op and txnID pointing into hv (no priority).
func (hv *headerVals) fill(h *bkproto.BKPacketHeader, op bkproto.OperationType, txnID uint64) {
	hv.version, hv.op, hv.txn = bkproto.ProtocolVersionV3, op, txnID
	h.Version, h.Operation, h.TxnId = &hv.version, &hv.op, &hv.txn
}

// addRequestAlloc holds an add request and the values it points to.
type addRequestAlloc struct {
	req               bkproto.Request
	hdr               bkproto.BKPacketHeader
	add               bkproto.AddRequest
	hv                headerVals
	ledgerID, entryID int64
	flag              bkproto.AddRequest_Flag
	key               [bkproto.MasterKeyBytes]byte
}

// readRequestAlloc holds a read request and the values it points to.
type readRequestAlloc struct {
	req                             bkproto.Request
	hdr                             bkproto.BKPacketHeader
	read                            bkproto.ReadRequest
	hv                              headerVals
	ledgerID, entryID, prev, millis int64
	flag                            bkproto.ReadRequest_Flag
	key                             [bkproto.MasterKeyBytes]byte
}

// ReadKind selects the operation of a ReadRequest.
type ReadKind uint8

// The read operations.
const (
	// ReadEntry is READ_ENTRY: one entry, or with EntryID −1 the bookie's
	// last entry (a LAC read, a fence, or a long poll).
	ReadEntry ReadKind = iota
	// ReadLAC is READ_LAC: the bookie's explicit LAC body and last entry.
	ReadLAC
)

// ReadRequest is one read sent to one bookie. As with adds, no two
// identical ReadRequests are ever in flight at once.
type ReadRequest struct {
	Bookie   BookieID
	Kind     ReadKind
	LedgerID int64
	EntryID  int64 // −1: the last entry (ReadEntry); ignored for ReadLAC
	// Fence sets FENCE_LEDGER and carries MasterKey. Every read recovery
	// sends fences, not only the first LAC read (Appendix A, pitfall 2).
	Fence     bool
	MasterKey [bkproto.MasterKeyBytes]byte
	// LongPoll asks the bookie to hold the read until its LAC passes
	// PreviousLAC or TimeoutMillis pass (docs/bookkeeper-protocol.md §3.3). Piggyback adds
	// ENTRY_PIGGYBACK: the answer may carry entry PreviousLAC+1.
	LongPoll      bool
	PreviousLAC   int64
	TimeoutMillis int64
	Piggyback     bool
	// BatchMaxCount, when positive, makes the read a v2 BATCH_READ_ENTRY
	// (v2 connections only; docs/bookkeeper-protocol.md §6.2): entries from
	// EntryID on, at most BatchMaxCount of them in at most BatchMaxSize
	// bytes. Its answer's Body is the batch (bkproto.V2BatchEntries).
	BatchMaxCount int32
	BatchMaxSize  int64
	// Speculative marks a read sent because the replicas asked before
	// went unanswered for SpeculativeTicks (the driver counts them as
	// BookKeeper's SPECULATIVE_READ_COUNT); it changes nothing on the wire.
	Speculative bool
}

// Request returns the v3 request for r with the given transaction id.
func (r ReadRequest) Request(txnID uint64) *bkproto.Request {
	if r.Kind == ReadLAC {
		h := bkproto.NewHeader(bkproto.OperationType_READ_LAC, txnID)
		return &bkproto.Request{Header: h, ReadLacRequest: &bkproto.ReadLacRequest{LedgerId: ptr(r.LedgerID)}}
	}
	// One allocation, as for adds: recovery builds one per entry.
	a := &readRequestAlloc{ledgerID: r.LedgerID, entryID: r.EntryID}
	a.hv.fill(&a.hdr, bkproto.OperationType_READ_ENTRY, txnID)
	read := &a.read
	read.LedgerId, read.EntryId = &a.ledgerID, &a.entryID
	switch {
	case r.Fence:
		a.flag, a.key = bkproto.ReadRequest_FENCE_LEDGER, r.MasterKey
		read.Flag, read.MasterKey = &a.flag, a.key[:]
		a.hv.priority = HighPriority
		a.hdr.Priority = &a.hv.priority
	case r.LongPoll && r.Piggyback:
		a.flag = bkproto.ReadRequest_ENTRY_PIGGYBACK
		read.Flag = &a.flag
	}
	if r.LongPoll {
		a.prev, a.millis = r.PreviousLAC, r.TimeoutMillis
		read.PreviousLAC, read.TimeOut = &a.prev, &a.millis
	}
	a.req.Header, a.req.ReadRequest = &a.hdr, read
	return &a.req
}

// ReadReply is a bookie's answer to a ReadRequest, as the state machines
// need it. Build it from a decoded response with ReadReplyOf, or with
// Status NoResponse when there was none.
type ReadReply struct {
	Status bkproto.StatusCode
	// EntryID is the entry id the bookie answered with (for a piggybacked
	// long poll, PreviousLAC+1 when Body holds that entry).
	EntryID int64
	// Body is an entry's stored form: ReadResponse.body, or
	// ReadLacResponse.lastEntryBody. Unverified.
	Body []byte
	// LACBody is ReadLacResponse.lacBody, the explicit LAC. Unverified.
	LACBody []byte
	// MaxLAC is ReadResponse.maxLAC, the bookie-known LAC, when HasMaxLAC.
	MaxLAC    int64
	HasMaxLAC bool
}

// ReadReplyOf extracts the reply from a decoded READ_ENTRY or READ_LAC
// response. A nil response gives Status NoResponse.
func ReadReplyOf(resp *bkproto.Response) ReadReply {
	if resp == nil {
		return ReadReply{Status: NoResponse}
	}
	rep := ReadReply{Status: bkproto.ResponseStatus(resp)}
	if r := resp.ReadResponse; r != nil {
		rep.EntryID = r.GetEntryId()
		rep.Body = r.Body
		rep.MaxLAC, rep.HasMaxLAC = r.GetMaxLAC(), r.MaxLAC != nil
	}
	if r := resp.ReadLacResponse; r != nil {
		rep.EntryID = bkproto.LastAddConfirmed
		rep.Body = r.LastEntryBody
		rep.LACBody = r.LacBody
	}
	return rep
}

// isNegative reports whether a read status is an explicit negative: the
// bookie says it never stored the entry (or anything of the ledger). With
// EOK these are the only definitive answers; everything else (EIO,
// EUNKNOWNLEDGERSTATE, ETOOMANYREQUESTS, NoResponse, a bad digest, ...) is
// unknown (docs/bookkeeper-protocol.md §1.5, Appendix A pitfall 1).
func isNegative(s bkproto.StatusCode) bool {
	return s == bkproto.StatusCode_ENOENTRY || s == bkproto.StatusCode_ENOLEDGER
}

func ptr[T any](v T) *T { return &v }
