// Package ledgerproc runs the ledger client against real processes: a
// `keeper server` holding the ledger metadata and `keeper bookie`
// processes, all built from this module once per test binary. Its tests
// kill a bookie of the ensemble with SIGKILL under a pipelined write
// (the writer must change the ensemble and lose nothing it acknowledged,
// a tailing reader must see every entry once, in order), kill a
// `keeper ledger write` process mid-stream (recovery must find at least
// every entry it reported acknowledged), and pause a writer process with
// SIGSTOP while another client recovers its ledger (once resumed, the old
// writer must be fenced and acknowledge nothing beyond the recovered
// end). These are scenarios 9 and 10 of docs/fault-model.md
// with real sockets, real processes and real fsyncs. It is a test-only
// package: see the _test.go files.
package ledgerproc
