// Package bookierpc is a connection to one bookie speaking BookKeeper's v3
// protocol (Dial: requests pipelined over one TCP connection and matched to
// responses by txnId) or its v2 protocol (DialV2: the same requests, matched
// by operation, ledger and entry; docs/bookkeeper-protocol.md §6.2). It knows nothing of ledgers, ensembles or quorums;
// ledgerclient drives it for those, and tests, `keeper bench bookie` and the
// crash tests use it to speak the protocol directly.
package bookierpc
