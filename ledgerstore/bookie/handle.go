package bookie

import (
	"encoding/binary"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/journal"
)

// maxLACBodyBytes bounds an explicit LAC body: ledgerId, lac and a digest
// of at most 20 bytes need 36; the entry store keeps up to 1024.
const maxLACBodyBytes = 1024

// dispatch runs one well-formed request. Every path ends its call exactly
// once, through cl.send (or cl.drop, if the connection goes first).
func (b *Bookie) dispatch(cl call, req *bkproto.Request) {
	h := req.GetHeader()
	switch h.GetOperation() {
	case bkproto.OperationType_ADD_ENTRY:
		b.addEntry(cl, h, req.AddRequest, nil)
	case bkproto.OperationType_READ_ENTRY:
		b.readEntry(cl, h, req.ReadRequest)
	case bkproto.OperationType_WRITE_LAC:
		b.writeLAC(cl, h, req.WriteLacRequest)
	case bkproto.OperationType_READ_LAC:
		b.readLAC(cl, h, req.ReadLacRequest)
	case bkproto.OperationType_FORCE_LEDGER:
		b.forceLedger(cl, h, req.ForceLedgerRequest)
	case bkproto.OperationType_GET_BOOKIE_INFO:
		b.bookieInfo(cl, h, req.GetBookieInfoRequest)
	case bkproto.OperationType_AUTH:
		b.auth(cl, h)
	default:
		// START_TLS on a bookie without TLS (the reader handles it on one
		// with TLS: tls.go) and GET_LIST_OF_ENTRIES_OF_LEDGER are not
		// served, as BookKeeper's bookie without TLS answers START_TLS.
		cl.sendStatus(h, bkproto.StatusCode_EBADREQ)
	}
}

// AuthDisabledPlugin is the auth plugin name of a bookie without an auth
// provider, as BookKeeper names it.
const AuthDisabledPlugin = "AuthDisabledPlugin"

// auth answers AUTH as a BookKeeper bookie without an auth provider does
// (docs/bookkeeper-protocol.md §6.2): every connection is already
// authenticated, so the message is ignored and answered with EOK and the
// disabled plugin's name and an empty payload.
func (b *Bookie) auth(cl call, h *bkproto.BKPacketHeader) {
	cl.send(&bkproto.Response{Header: responseHeader(h), Status: bkproto.StatusCode_EOK.Enum(),
		AuthResponse: &bkproto.AuthMessage{AuthPluginName: proto.String(AuthDisabledPlugin), Payload: []byte{}}})
}

// statusOf maps an outcome to the status a client receives. Only the
// store's certain answers become ENOLEDGER or ENOENTRY; any other failure
// is EIO, "outcome unknown", never absence (docs/bookkeeper-protocol.md Appendix A item 1).
func statusOf(err error) bkproto.StatusCode {
	switch {
	case err == nil:
		return bkproto.StatusCode_EOK
	case errors.Is(err, entrystore.ErrNoLedger):
		return bkproto.StatusCode_ENOLEDGER
	case errors.Is(err, entrystore.ErrNoEntry):
		return bkproto.StatusCode_ENOENTRY
	case errors.Is(err, entrystore.ErrMasterKeyMismatch):
		return bkproto.StatusCode_EUA
	case errors.Is(err, entrystore.ErrFenced):
		return bkproto.StatusCode_EFENCED
	case errors.Is(err, entrystore.ErrBadEntry):
		return bkproto.StatusCode_EBADREQ
	}
	return bkproto.StatusOf(err) // *bkproto.Error's status, else EIO
}

// bindMasterKey binds ledger to key on first contact, or checks key
// against the bound one (EUA on a mismatch). On first contact it journals
// a master-key record ahead of whatever the caller journals next, so that
// a restart restores the key (docs/bookkeeper-protocol.md §7.2 step 3). Caller holds the
// ledger's lock, which keeps the key record ahead of the ledger's other
// records in the journal.
func (b *Bookie) bindMasterKey(jr *journaler, ledgerID int64, key []byte) error {
	known := b.store.HasLedger(ledgerID)
	if err := b.store.SetMasterKey(ledgerID, key); err != nil {
		return err
	}
	if !known {
		jr.enqueue(journalOp{rec: journal.NewMasterKeyRecord(ledgerID, key)})
	}
	return nil
}

// addEntry stores an entry in the order of docs/bookkeeper-protocol.md §7.2: check the master
// key and the fence, insert into ledger storage (the entry is readable
// and wakes long polls), journal it, and answer only once the batch
// holding it is synced. If fb is not nil, r and h may live in it (an
// AddBuffer) and r's byte fields alias it: addEntry reads them only before
// it hands the record to the journal, which returns fb to its pool once it
// has copied the record (or at once, if the add ends earlier). The answer
// keeps what it needs of h by value.
func (b *Bookie) addEntry(cl call, h *bkproto.BKPacketHeader, r *bkproto.AddRequest, fb *frameBuf) {
	ad := addDone{b: b, cl: cl, rh: bkproto.AddReplyOf(h), start: time.Now(),
		ledgerID: r.GetLedgerId(), entryID: r.GetEntryId()}
	// (GetFlag defaults to RECOVERY_ADD, the enum's first value: test presence.)
	recovery := r.Flag != nil && *r.Flag == bkproto.AddRequest_RECOVERY_ADD
	if err := b.checkWritable(recovery || h.GetPriority() > 0); err != nil {
		fb.put()
		ad.reply(err)
		return
	}
	ledgerID, entryID := ad.ledgerID, ad.entryID
	jr := b.journalFor(ledgerID)
	lock := b.ledgerLock(ledgerID)
	lock.Lock()
	sum, err := b.storeAdd(jr, ledgerID, entryID, r.Body, r.MasterKey, recovery)
	if err != nil {
		lock.Unlock()
		fb.put()
		ad.reply(err)
		return
	}
	rec, err := journal.NewEntryRecordSummed(r.Body, sum)
	if err != nil { // cannot happen: the request was validated
		lock.Unlock()
		fb.put()
		ad.reply(bkproto.Errorf(bkproto.StatusCode_EBADREQ, "%v", err))
		return
	}
	// The last reads of r's bytes: once enqueued, fb may go back to its
	// pool at any moment.
	size := len(r.Body)
	lac := int64(binary.BigEndian.Uint64(r.Body[16:24]))
	jr.enqueue(journalOp{rec: rec, add: ad, frame: fb})
	lock.Unlock()
	b.m.writeBytes.Add(float64(size))
	b.m.addBytes.Record(int64(size), true)
	b.lacs.notify(ledgerID, lac)
}

// addDone is how an add is answered: what the answer needs, by value (the
// request it came from may be reused by then).
type addDone struct {
	b                 *Bookie
	cl                call
	rh                bkproto.AddReply
	start             time.Time
	ledgerID, entryID int64
}

// reply answers the add with err's status and records it.
func (d *addDone) reply(err error) {
	b := d.b
	st := statusOf(err)
	if st == bkproto.StatusCode_EIO {
		b.log.Debug("add failed", "ledger", d.ledgerID, "entry", d.entryID, "err", err)
	}
	d.cl.sendAdd(d.rh, st, d.ledgerID, d.entryID)
	observe(b.m.addEntry, d.start, st == bkproto.StatusCode_EOK)
	if st == bkproto.StatusCode_ETOOMANYREQUESTS {
		b.m.addRejected.Inc()
	}
}

// writeLAC stores an explicit LAC: bind or check the master key, keep the
// body, journal it, and answer once that record is durable. Long polls
// waiting on the ledger wake.
func (b *Bookie) writeLAC(cl call, h *bkproto.BKPacketHeader, r *bkproto.WriteLacRequest) {
	start := time.Now()
	ledgerID := r.GetLedgerId()
	reply := func(err error) {
		st := statusOf(err)
		s := st.Enum()
		cl.send(&bkproto.Response{Header: responseHeader(h), Status: s,
			WriteLacResponse: &bkproto.WriteLacResponse{Status: s, LedgerId: proto.Int64(ledgerID)}})
		observe(b.m.writeLAC, start, st == bkproto.StatusCode_EOK)
	}
	if len(r.Body) > maxLACBodyBytes {
		reply(bkproto.Errorf(bkproto.StatusCode_EBADREQ, "LAC body of %d bytes", len(r.Body)))
		return
	}
	if err := b.checkWritable(h.GetPriority() > 0); err != nil {
		reply(err)
		return
	}
	jr := b.journalFor(ledgerID)
	lock := b.ledgerLock(ledgerID)
	lock.Lock()
	err := b.bindMasterKey(jr, ledgerID, r.MasterKey)
	if err == nil {
		err = b.store.SetExplicitLAC(ledgerID, r.Body)
	}
	if err != nil {
		lock.Unlock()
		reply(err)
		return
	}
	jr.enqueue(journalOp{rec: journal.NewExplicitLACRecord(ledgerID, r.Body), done: reply})
	lock.Unlock()
	b.lacs.notify(ledgerID, r.GetLac())
}

// forceLedger answers once everything the ledger's journal holds is
// durable. keeper acknowledges DEFERRED_SYNC adds only after their sync
// anyway, so this matters only with journalSyncData=false.
func (b *Bookie) forceLedger(cl call, h *bkproto.BKPacketHeader, r *bkproto.ForceLedgerRequest) {
	start := time.Now()
	ledgerID := r.GetLedgerId()
	b.m.forceLedgerOps.Inc()
	b.journalFor(ledgerID).enqueue(journalOp{force: true, done: func(err error) {
		st := statusOf(err)
		s := st.Enum()
		cl.send(&bkproto.Response{Header: responseHeader(h), Status: s,
			ForceLedgerResponse: &bkproto.ForceLedgerResponse{Status: s, LedgerId: proto.Int64(ledgerID)}})
		observe(b.m.forceLedger, start, st == bkproto.StatusCode_EOK)
	}})
}

// bookieInfo answers with the ledger directories' total and free bytes.
func (b *Bookie) bookieInfo(cl call, h *bkproto.BKPacketHeader, r *bkproto.GetBookieInfoRequest) {
	start := time.Now()
	resp := &bkproto.GetBookieInfoResponse{}
	usage, err := b.store.Usage()
	st := statusOf(err)
	if err == nil {
		var total, free uint64
		for _, u := range usage {
			total += u.TotalBytes
			free += u.TotalBytes - min(u.UsedBytes, u.TotalBytes)
		}
		want := r.GetRequested()
		if want&int64(bkproto.GetBookieInfoRequest_TOTAL_DISK_CAPACITY) != 0 {
			resp.TotalDiskCapacity = proto.Int64(int64(total))
		}
		if want&int64(bkproto.GetBookieInfoRequest_FREE_DISK_SPACE) != 0 {
			resp.FreeDiskSpace = proto.Int64(int64(free))
		}
	} else {
		b.log.Warn("disk usage unavailable", "err", err)
	}
	resp.Status = st.Enum()
	cl.send(&bkproto.Response{Header: responseHeader(h), Status: st.Enum(), GetBookieInfoResponse: resp})
	observe(b.m.bookieInfo, start, st == bkproto.StatusCode_EOK)
}
