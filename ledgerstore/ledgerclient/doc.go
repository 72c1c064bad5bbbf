// Package ledgerclient creates, writes, reads, tails, recovers and deletes
// BookKeeper-style ledgers. It is the driver of package ledger's pure state
// machines: it feeds them the answers of real bookies (package bookierpc,
// one pipelined connection per bookie, v3, or v2 with
// Config.UseV2WireProtocol) and of the metadata store
// (package metadata, ledger metadata in ZooKeeper or keeper), and carries
// out the work they hand back, exactly as ledger's "Driving a machine"
// prescribes. The rules of the protocol (ordering, fencing, coverage,
// when the LAC may move) live in package ledger; this package adds
// sockets, timers and goroutines. The reference is
// docs/bookkeeper-protocol.md §§1-5.
//
// # API
//
//	c, _ := ledgerclient.New(ledgerclient.Config{ZKServers: []string{"127.0.0.1:2181"}})
//	w, _ := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: pw})
//	id, _ := w.Append(ctx, data)             // or w.AppendAsync(data, callback), pipelined
//	_ = w.Close(ctx)                         // CLOSED at the LAC
//	h, _ := c.Open(ctx, w.ID(), pw)          // with recovery; OpenNoRecovery leaves a writer alone
//	entries, _ := h.Read(ctx, 0, h.LAC())
//	for e, err := range h.Tail(ctx, 0) { ... } // every entry once, in order, until the close
//
// # Goroutines
//
// Every ledger operation is one state machine run by one loop
// (driver.run): an inbox of inputs, a ticker for Tick, and, for a tail, a
// watch of the ledger's metadata. After each input the loop carries out
// the machine's Ready: each add or read goes out on a goroutine that waits
// for the bookie's answer (or the add/read timeout, or the connection's
// end, all reported as ledger.NoResponse) and posts it back; a metadata
// compare-and-set runs the same way, and a failed one is answered by
// reading the metadata back. The loop itself never blocks on I/O or on
// application code.
//
// A Writer's loop runs on a goroutine of its own for the ledger's life,
// with a second goroutine that runs AppendAsync callbacks in entry order.
// Recovery (Open), Read, ReadLAC and Tail run their loop on the calling
// goroutine until the machine is done.
//
// The Client owns what handles share: the metadata store (over a
// zkclient.Session, Config.ZK, or one it opens on Config.ZKServers, which
// reattaches to another server after a lost connection), a watch of the
// bookie registry (fed to writers and recoveries as replacement
// candidates; read-only bookies are never chosen), and the bookie
// connections, dialled on first use and again after they end. When a
// connection ends, every writer and recovery hears of it at once
// (BookieFailed) and replaces the bookie if it is in its ensemble, instead
// of waiting for each request's timeout.
//
// # Errors
//
// Outcomes to branch on are package ledger's sentinels
// (ledger.ErrLedgerFenced, ErrLedgerClosed, ErrOutcomeUnknown,
// ErrReadBeyondLAC, ErrNotEnoughBookies, ...) and this package's
// ErrClientClosed, ErrNoSuchLedger and ErrUnauthorized. A failed add whose
// error matches ledger.ErrOutcomeUnknown may still be in the ledger once
// it is closed (docs/bookkeeper-protocol.md Appendix A, pitfall 7).
package ledgerclient
