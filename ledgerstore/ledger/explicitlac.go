package ledger

import "keeper/ledgerstore/bkproto"

// LACWriteRequest is a WRITE_LAC to one bookie: the writer's LAC, sent
// explicitly because no add has carried it to the bookies
// (docs/bookkeeper-protocol.md §2.5). Its answer changes nothing: the
// driver sends it and lets it go, as BookKeeper's client does.
type LACWriteRequest struct {
	Bookie    BookieID
	LedgerID  int64
	LAC       int64
	MasterKey [bkproto.MasterKeyBytes]byte
	// Body is bkproto.EncodeLAC's digest-protected ledgerId | lac, shared
	// by the ensemble's requests: read-only.
	Body []byte
}

// Request returns the v3 request for r with the given transaction id.
func (r LACWriteRequest) Request(txnID uint64) *bkproto.Request {
	h := bkproto.NewHeader(bkproto.OperationType_WRITE_LAC, txnID)
	return &bkproto.Request{Header: h, WriteLacRequest: &bkproto.WriteLacRequest{
		LedgerId: ptr(r.LedgerID), Lac: ptr(r.LAC), MasterKey: r.MasterKey[:], Body: r.Body}}
}

// explicitLAC is a writer's explicit LAC policy, BookKeeper's
// ExplicitLacFlushPolicy: every interval ticks, if adds carried a newer LAC
// since the last look, it only notes that LAC (adds are flowing and carry
// it); otherwise, if the writer's LAC passed the last LAC the bookies were
// told of, it sends that LAC to every bookie of the current ensemble.
type explicitLAC struct {
	interval int64 // ticks; 0: off
	ticks    int64
	sent     int64 // the last LAC sent explicitly or seen carried by an add
	carried  int64 // the greatest LAC an add has carried
}

// Tick advances the writer's clock by one tick; with an explicit LAC
// interval (WriterConfig.ExplicitLACTicks) it may send the LAC to the
// ensemble with WRITE_LAC.
func (w *Writer) Tick() {
	x := &w.explicit
	if x.interval <= 0 || w.recovery || w.done || w.err != nil {
		return
	}
	x.ticks++
	if x.ticks%x.interval != 0 {
		return
	}
	if x.sent < x.carried {
		x.sent = x.carried
		return
	}
	// During an ensemble change the LAC is frozen and the ensemble is in
	// flux: nothing to tell.
	if w.lac <= x.sent || w.change != nil || w.lac < 0 {
		return
	}
	x.sent = w.lac
	body := bkproto.EncodeLAC(w.ledgerID, w.lac, w.md.Digest(), w.macKey)
	for _, b := range w.ensemble {
		w.ready.LACWrites = append(w.ready.LACWrites, LACWriteRequest{Bookie: b, LedgerID: w.ledgerID,
			LAC: w.lac, MasterKey: w.masterKey, Body: body})
	}
}
