package lint

import "strings"

// tierEntry places a package, named by its path inside the module, in a tier.
// With subpackages set, every package below it is in the same tier.
type tierEntry struct {
	pkg         string
	tier        int
	subpackages bool
}

// tierTable is docs/development.md's layout. A package may import packages of its own
// tier or lower, except for the edges in forbiddenEdges.
var tierTable = []tierEntry{
	// Tier 0, leaf: stdlib only.
	{pkg: "coordination/zxid"}, {pkg: "coordination/jute"}, {pkg: "coordination/zoocfg"},
	{pkg: "coordination/jaas"}, // JAAS login configuration files, parsed from bytes
	{pkg: "internal/invariants"},
	{pkg: "internal/failpoint"}, // named crash points; the binary installs the actions
	{pkg: "internal/skewclock"}, // a chaos build's skewable clock, pure: real readings passed in
	{pkg: "internal/metric"},    // counters and summaries; values measured by the callers
	{pkg: "internal/typo"},      // a mistyped configuration key, one edit from a known one
	// Tier 1, pure domain: no os/net, no clock or timers, no global rand, no `go`.
	{pkg: "coordination/zkproto", tier: 1}, {pkg: "coordination/txn", tier: 1},
	{pkg: "coordination/datatree", tier: 1}, {pkg: "coordination/session", tier: 1},
	{pkg: "coordination/watch", tier: 1}, {pkg: "coordination/acl", tier: 1},
	{pkg: "coordination/zkcore", tier: 1}, {pkg: "coordination/zab", tier: 1},
	{pkg: "coordination/sasl", tier: 1},                  // SASL mechanisms: token in, token out
	{pkg: "coordination/kerberos", tier: 1},              // accepting Kerberos GSS-API contexts: keytab bytes and now passed in
	{pkg: "coordination/kerberos/kerberostest", tier: 1}, // tests' Kerberos initiator, without a KDC
	{pkg: "ledgerstore/ledger", tier: 1}, {pkg: "ledgerstore/bkproto", tier: 1},
	// Tier 2, storage: files only through vfs.FS.
	{pkg: "internal/vfs", tier: 2, subpackages: true},
	{pkg: "internal/durablelog", tier: 2}, // the rules txnlog and the bookie journal share
	{pkg: "coordination/txnlog", tier: 2}, {pkg: "coordination/snap", tier: 2},
	{pkg: "ledgerstore/bookie/journal", tier: 2}, {pkg: "ledgerstore/bookie/entrystore", tier: 2},
	// Tier 3, drivers: the only goroutines, sockets and time.Now.
	{pkg: "coordination/peer", tier: 3}, {pkg: "coordination/quorumnet", tier: 3},
	{pkg: "coordination/clientconn", tier: 3}, {pkg: "coordination/server", tier: 3},
	{pkg: "coordination/admin", tier: 3},
	{pkg: "coordination/clienttls", tier: 3}, // TLS for the client port: key and trust store files
	{pkg: "coordination/zkclient", tier: 3},  // keeper's own ZooKeeper client: sockets and goroutines
	{pkg: "coordination/krblogin", tier: 3},  // Kerberos logins (keytab, credential cache) and GSSAPI initiators: the KDC
	{pkg: "ledgerstore/bookie", tier: 3}, {pkg: "ledgerstore/metadata", tier: 3},
	{pkg: "ledgerstore/bookie/httpadmin", tier: 3}, // the bookie's HTTP admin API (httpServerEnabled)
	{pkg: "ledgerstore/ledgerclient", tier: 3, subpackages: true}, {pkg: "ledgerstore/bookierpc", tier: 3},
	{pkg: "ledgerstore/autorecovery", tier: 3}, // auditor and replication workers over metadata and ledgerclient
	// BookKeeper's START_TLS: the tls* keys, stores read through
	// clienttls; bookietlstest issues tests' certificates.
	{pkg: "ledgerstore/bookietls", tier: 3, subpackages: true},
	// Tests' in-memory keeper server under the metadata store; it imports
	// no metadata, so that package's own tests can use it too.
	{pkg: "ledgerstore/metadata/metadatatest", tier: 3},
	// Tests' ports outside the ephemeral range, and their timescale; tier 3
	// so that ledgertest's in-process cluster may take its ports there.
	{pkg: "internal/testhost", tier: 3},
	// Tests' in-memory network (net.Pipe listeners and dials) that a
	// testing/synctest bubble can wait on.
	{pkg: "internal/memnet", tier: 3},
	{pkg: "internal/cutproxy", tier: 3},
	// The garbage collector's heap goal for the server commands: process-wide.
	{pkg: "internal/gctune", tier: 3},
	// Tier 4, verification and the binary.
	{pkg: "verify", tier: 4, subpackages: true}, // sim, chaos, compat
	{pkg: "cmd/keeper", tier: 4, subpackages: true}, {pkg: "internal/lint", tier: 4},
	{pkg: "bench", tier: 4},              // the load tool: zkclient, the null server, fsync
	{pkg: "internal/keeperbin", tier: 4}, // builds cmd/keeper for real-process tests
}

// maxPureTier is the highest tier whose packages must be pure.
const maxPureTier = 1

// forbiddenEdges are imports docs/development.md rules out even where the tiers would
// allow them. Each side matches the package and its subpackages.
var forbiddenEdges = []struct{ from, to string }{
	{"coordination/zab", "coordination/txnlog"},
	{"coordination/zab", "coordination/quorumnet"},
	{"coordination/zab", "coordination/zkcore"},
	{"coordination/zkcore", "coordination/peer"},
	{"coordination/datatree", "coordination/zab"},
	{"ledgerstore/ledger", "ledgerstore/metadata"},
}

// thirdParty lists, per module, the packages whose non-test files may import
// it (docs/development.md rule 14). Test files may import any module in go.mod. A new
// module, or a new user of one, needs a written reason in the commit that
// adds it here.
var thirdParty = map[string][]string{
	// A third-party client against keeper, for compatibility runs only: the
	// ledger store speaks to the coordination service through
	// coordination/zkclient (go-zookeeper races on its own reconnect).
	"github.com/go-zookeeper/zk":          {"verify/compat"},
	"github.com/cockroachdb/pebble":       {"ledgerstore/bookie/entrystore"},
	"github.com/spf13/cobra":              {"cmd/keeper"},
	"github.com/spf13/pflag":              {"cmd/keeper"},
	"github.com/prometheus/client_golang": {"coordination/admin", "ledgerstore/bookie"},
	"github.com/cockroachdb/datadriven":   {testSupport},
	"github.com/anishathalye/porcupine":   {testSupport},
	// The ledger store's v3 protocol and metadata are protobuf, as the mission's dependency list says.
	// Java's key and trust store formats, for TLS on the client port
	// (docs/tls.md): maintained readers rather than hand-written parsers.
	"software.sslmate.com/src/go-pkcs12":         {"coordination/clienttls"},
	"github.com/pavlo-v-chernykh/keystore-go/v4": {"coordination/clienttls"},
	"google.golang.org/protobuf":                 {"ledgerstore/bkproto", "ledgerstore/bookie", "ledgerstore/bookierpc", "ledgerstore/metadata", "ledgerstore/ledgerclient", "ledgerstore/autorecovery"},
	// Kerberos tickets, keytabs and enctypes for SASL GSSAPI (docs/sasl.md):
	// RFC 3961/3962/8009 cryptography and the RFC 4120 ASN.1 types are not
	// something to hand-write.
	// The server's start-up login to the KDC (isInitiator) uses its client,
	// and krblogin its client and credential caches for the initiators of
	// quorum learners and keeper's own clients.
	"github.com/jcmturner/gokrb5/v8": {"coordination/kerberos", "coordination/server", "coordination/krblogin"},
	// keeper shell's line editor (history, completion), as zkCli has JLine's.
	"github.com/chzyer/readline": {"cmd/keeper"},
}

// testSupport stands for tier-4 packages and scenario environments (a
// package whose name ends in "test", such as zab/zabtest): code only tests
// import, which may use the test-only modules.
const testSupport = "<test support>"

// tierOf returns pkg's tier. ok is false for a package not in the table.
func tierOf(pkg string) (tier int, ok bool) {
	best := -1
	for i, e := range tierTable {
		if e.pkg == pkg {
			return e.tier, true
		}
		if e.subpackages && under(pkg, e.pkg) && (best < 0 || len(e.pkg) > len(tierTable[best].pkg)) {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	return tierTable[best].tier, true
}

// under reports whether pkg is dir or below it.
func under(pkg, dir string) bool {
	return pkg == dir || strings.HasPrefix(pkg, dir+"/")
}
