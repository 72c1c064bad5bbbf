package autorecovery

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
)

// Znode names below the ledgers root (docs/autorecovery.md, "The tree").
const (
	underRepNode     = "underreplication"
	urLedgersNode    = "ledgers"
	locksNode        = "locks"
	layoutNode       = "LAYOUT"
	electionNode     = "auditorelection"
	disableNode      = "disable"
	delayNode        = "lostBookieRecoveryDelay"
	markerPrefix     = "urL"
	votePrefix       = "V_"
	layoutType       = "BASIC"
	layoutVersion    = 1
	hierarchyLevels  = 4
	maxTextFormBytes = 1 << 20 // ZooKeeper's default jute.maxbuffer: no znode holds more
)

// ErrMalformed means a znode's content does not decode.
var ErrMalformed = errors.New("autorecovery: malformed znode content")

// Paths names the under-replication tree of one ledgers root.
type Paths struct{ Base string }

// NewPaths returns the tree below root (such as /ledgers).
func NewPaths(root string) Paths { return Paths{Base: root + "/" + underRepNode} }

// Ledgers is the directory of the markers' hierarchy.
func (p Paths) Ledgers() string { return p.Base + "/" + urLedgersNode }

// Locks is the directory of the workers' locks.
func (p Paths) Locks() string { return p.Base + "/" + locksNode }

// Layout is the tree's LAYOUT znode.
func (p Paths) Layout() string { return p.Base + "/" + layoutNode }

// Election is the directory of the auditor votes.
func (p Paths) Election() string { return p.Base + "/" + electionNode }

// Disable is the znode whose existence pauses every worker.
func (p Paths) Disable() string { return p.Base + "/" + disableNode }

// Delay is the lostBookieRecoveryDelay znode (decimal seconds).
func (p Paths) Delay() string { return p.Base + "/" + delayNode }

// Marker returns ledger id's marker: the id's four 16-bit groups in
// lowercase hex, most significant first, then urL and the id in at least
// ten decimal digits. The id must not be negative.
func (p Paths) Marker(id int64) string {
	return fmt.Sprintf("%s/%04x/%04x/%04x/%04x/%s", p.Ledgers(),
		id>>48&0xffff, id>>32&0xffff, id>>16&0xffff, id&0xffff, MarkerName(id))
}

// Lock returns ledger id's lock znode.
func (p Paths) Lock(id int64) string { return p.Locks() + "/" + MarkerName(id) }

// MarkerName is the leaf name of ledger id's marker and lock.
func MarkerName(id int64) string { return fmt.Sprintf("%s%010d", markerPrefix, id) }

// ParseMarkerName returns the ledger id a marker or lock leaf names.
func ParseMarkerName(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, markerPrefix)
	if !ok || len(digits) < 10 || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	return id, err == nil
}

// parseVoteSeq returns the sequence number of an election vote V_<seq>.
func parseVoteSeq(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, votePrefix)
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	return seq, err == nil
}

// Marked is one under-replicated ledger as its marker describes it.
type Marked struct {
	LedgerID int64
	// Replicas are the bookies the auditor found missing, in the order
	// they were added.
	Replicas []string
	// CTimeMillis is when the ledger was marked, if the marker says (-1
	// if not).
	CTimeMillis int64
}

// EncodeMarker writes an UnderreplicatedLedgerFormat in protobuf text
// format, as BookKeeper's Java toString() does: one "replica" line per
// bookie, then "ctime" if ctimeMillis is not negative.
func EncodeMarker(replicas []string, ctimeMillis int64) []byte {
	var b []byte
	for _, r := range replicas {
		b = appendTextString(b, "replica", r)
	}
	if ctimeMillis >= 0 {
		b = fmt.Appendf(b, "ctime: %d\n", ctimeMillis)
	}
	return b
}

// DecodeMarker reads an UnderreplicatedLedgerFormat in text format.
func DecodeMarker(data []byte) (replicas []string, ctimeMillis int64, err error) {
	var f bkproto.UnderreplicatedLedgerFormat
	if err := decodeText(data, &f); err != nil {
		return nil, 0, err
	}
	ctimeMillis = -1
	if f.Ctime != nil {
		ctimeMillis = f.GetCtime()
	}
	return slices.Clip(f.Replica), ctimeMillis, nil
}

// EncodeLockData writes a LockDataFormat naming the worker that holds a
// lock; an empty id writes an empty message, as a Java worker that could
// not name its host does.
func EncodeLockData(workerID string) []byte {
	if workerID == "" {
		return []byte{}
	}
	return appendTextString(nil, "bookieId", workerID)
}

// DecodeLockData reads a LockDataFormat and returns the worker it names.
func DecodeLockData(data []byte) (string, error) {
	var f bkproto.LockDataFormat
	if err := decodeText(data, &f); err != nil {
		return "", err
	}
	return f.GetBookieId(), nil
}

// EncodeVote writes an AuditorVoteFormat naming a bookie.
func EncodeVote(bookieID string) []byte { return appendTextString(nil, "bookieId", bookieID) }

// DecodeVote reads an AuditorVoteFormat and returns the bookie it names.
func DecodeVote(data []byte) (string, error) {
	var f bkproto.AuditorVoteFormat
	if err := decodeText(data, &f); err != nil {
		return "", err
	}
	return f.GetBookieId(), nil
}

// encodeLayout writes the tree's LAYOUT: a LedgerRereplicationLayoutFormat
// of type BASIC, version 1.
func encodeLayout() []byte {
	return fmt.Appendf(appendTextString(nil, "type", layoutType), "version: %d\n", layoutVersion)
}

// checkLayout reports whether LAYOUT content names the one layout there is.
func checkLayout(data []byte) error {
	var f bkproto.LedgerRereplicationLayoutFormat
	if err := decodeText(data, &f); err != nil {
		return err
	}
	if f.GetType() != layoutType || f.GetVersion() != layoutVersion {
		return fmt.Errorf("autorecovery: under-replication layout %s:%d, want %s:%d",
			f.GetType(), f.GetVersion(), layoutType, layoutVersion)
	}
	return nil
}

// EncodeDelay writes lostBookieRecoveryDelay: decimal seconds.
func EncodeDelay(seconds int) []byte { return strconv.AppendInt(nil, int64(seconds), 10) }

// DecodeDelay reads lostBookieRecoveryDelay. Java reads it with
// Integer.parseInt: an optional sign, then decimal digits, nothing else.
func DecodeDelay(data []byte) (int, error) {
	s := string(data)
	if len(s) > 12 || s == "" || strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+"), "0123456789") != "" {
		return 0, fmt.Errorf("%w: lostBookieRecoveryDelay %q", ErrMalformed, data)
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: lostBookieRecoveryDelay %q", ErrMalformed, data)
	}
	return int(n), nil
}

// decodeText reads a message in protobuf text format, refusing unknown
// fields as Java's TextFormat.merge does.
func decodeText(data []byte, m proto.Message) error {
	if len(data) > maxTextFormBytes {
		return fmt.Errorf("%w: %d bytes", ErrMalformed, len(data))
	}
	if err := prototext.Unmarshal(data, m); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// appendTextString appends one string field in text format, escaped as
// Java's TextFormat escapes bytes: quote, backslash and the usual C
// escapes by name, other bytes outside printable ASCII in octal.
func appendTextString(b []byte, field, value string) []byte {
	b = append(b, field...)
	b = append(b, ": \""...)
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case '"', '\\', '\'':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			if c < 0x20 || c >= 0x7f {
				b = fmt.Appendf(b, "\\%03o", c)
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, "\"\n"...)
}
