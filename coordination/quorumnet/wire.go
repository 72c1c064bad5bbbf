package quorumnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"keeper/coordination/jute"
	"keeper/coordination/zab"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// Bounds on what a peer may send. Every length read from a socket is
// checked against one of these before anything is allocated for it.
const (
	// DefaultMaxPacketDataBytes bounds the data buffer of one QuorumPacket.
	// A Java peer rejects buffers over jute.maxbuffer plus the same again
	// as "extra" (2 MiB with the defaults); a txn is at most one client
	// frame plus headers, and a learner's PING carries 12 bytes per session
	// it touched. Twice Java's limit accepts anything a default Java peer
	// sends, yet stops a corrupt length from allocating gigabytes.
	DefaultMaxPacketDataBytes = 4 << 20
	// DefaultMaxSnapshotBytes bounds the snapshot streamed after SNAP. The
	// learner holds it in memory whole (zab.Message.Data), so the bound is
	// on memory, not on the protocol.
	DefaultMaxSnapshotBytes int64 = 1 << 30
	// MaxElectionFrameBytes is ZooKeeper's limit on one election message
	// (QuorumCnxManager.PACKETMAXSIZE, docs/zookeeper-protocol.md §10.1).
	MaxElectionFrameBytes = 512 << 10

	// maxAuthInfoBytes bounds a packet's authinfo vector (the client's
	// identities on a forwarded REQUEST, a handful of short strings in
	// practice); we read and discard it.
	maxAuthInfoBytes = 1 << 20
	// packetHeaderBytes is a QuorumPacket's fixed part: type, zxid, the data
	// length and the authinfo count.
	packetHeaderBytes = 4 + 8 + 4 + 4
	// snapSignatureBytes is what the signature after a snapshot may take.
	snapSignatureBytes = 64
)

// Errors. Decoders wrap one of these; a transport closes the connection on
// any of them.
var (
	// ErrMalformed means the bytes do not form a valid message.
	ErrMalformed = errors.New("quorumnet: malformed message")
	// ErrTooLarge means a length in the input exceeds a bound above.
	ErrTooLarge = errors.New("quorumnet: message too large")
	// ErrUnsupported means a QuorumPacket type ZooKeeper never sends, or
	// a zab message that never crosses a link.
	ErrUnsupported = errors.New("quorumnet: unsupported message type")
)

const (
	// zabVersion is the Zab protocol version (1.0) in LearnerInfo and
	// LEADERINFO, as Apache ZooKeeper sends it.
	zabVersion = 0x10000
	// keeperZabVersion is the protocol version keeper sends instead, to
	// announce zab.DialectKeeper (docs/zookeeper-protocol.md §10.5). Apache
	// ZooKeeper only checks that a learner's version is at least 0x10000
	// and ignores the leader's, and has only ever sent 0x10000 (or nothing,
	// before 3.4): no Java server announces this one.
	keeperZabVersion = 0x14b50
	// snapSignature follows the snapshot body on the stream.
	snapSignature = "BenWasHere"
	// learnerInfo sizes: {long serverid} before ZooKeeper 3.4, then
	// {+int protocolVersion}, then {+long configVersion} since 3.5.
	learnerInfoV0, learnerInfoV1, learnerInfoV2 = 8, 12, 20
	// requestHeaderBytes is the part of a forwarded REQUEST's data before
	// the client request body: long sessionId; int cxid; int type.
	requestHeaderBytes = 16
	// designatedBytes is the designated leader's id that starts the data
	// of COMMITANDACTIVATE and INFORMANDACTIVATE: a long.
	designatedBytes = 8
)

// limits are the bounds one connection enforces.
type limits struct {
	dataBytes     int
	snapshotBytes int64
}

var defaultLimits = limits{dataBytes: DefaultMaxPacketDataBytes, snapshotBytes: DefaultMaxSnapshotBytes}

// canonicalSyncRequest is the data of a REQUEST that carries a
// zab.MsgSyncRequest with no client request attached: session 0, cxid 0,
// op sync(9), path "/".
var canonicalSyncRequest = func() []byte {
	e := jute.Encoder{}
	e.Long(0)
	e.Int(0)
	e.Int(int32(zkproto.OpSync))
	e.Record(&zkproto.SyncRequest{Path: "/"})
	return e.B
}()

// snapTrailer is the signature written after a snapshot body.
var snapTrailer = func() []byte {
	e := jute.Encoder{}
	e.String(snapSignature)
	return e.B
}()

// EncodeQuorumPacket returns m as ZooKeeper's QuorumPacket
// {int type; long zxid; buffer data; vector<Id> authinfo}, laid out for
// each type as ZooKeeper does (see the package comment). For SNAP the
// result also holds what follows the packet on the stream: the snapshot
// body (m.Data) and the signature.
func EncodeQuorumPacket(m zab.Message) ([]byte, error) {
	head, body, err := encodePacket(m)
	if err != nil || body == nil {
		return head, err
	}
	out := make([]byte, 0, len(head)+len(body)+len(snapTrailer))
	out = append(append(append(out, head...), body...), snapTrailer...)
	return out, nil
}

// encodePacket returns the QuorumPacket for m and, for SNAP, the snapshot
// body to write after it (then snapTrailer). The body is m.Data itself, so
// a large snapshot is never copied.
func encodePacket(m zab.Message) (head, snapBody []byte, err error) {
	typ, z, data, err := packetFields(m)
	if err != nil {
		return nil, nil, err
	}
	e := jute.Encoder{B: make([]byte, 0, packetHeaderBytes+len(data))}
	e.Int(int32(typ))
	e.Long(int64(z))
	e.Buffer(data)
	// ZooKeeper leaves authinfo null except on a forwarded request, where it
	// is the client's identities.
	switch {
	case typ != zab.MsgRequest:
		e.VectorLen(0, true)
	case m.AuthInfo == nil:
		e.VectorLen(0, false)
	default:
		if err := checkAuthInfo(m.AuthInfo); err != nil {
			return nil, nil, err
		}
		e.B = append(e.B, m.AuthInfo...)
	}
	if typ != zab.MsgSnap {
		return e.B, nil, nil
	}
	if err := checkSnapshotBody(m.Data); err != nil {
		return nil, nil, err
	}
	return e.B, m.Data, nil
}

// packetFields maps m to the QuorumPacket type, zxid and data.
func packetFields(m zab.Message) (zab.MsgType, zxid.ID, []byte, error) {
	switch m.Type {
	case zab.MsgRequest:
		if isSyncRequest(m.Data) {
			return 0, 0, nil, fmt.Errorf("%w: a sync request must be sent as %s", ErrMalformed, zab.MsgSyncRequest)
		}
		return zab.MsgRequest, zxid.None, m.Data, nil
	case zab.MsgSyncRequest:
		data := m.Data
		if data == nil {
			data = canonicalSyncRequest
		} else if !isSyncRequest(data) {
			return 0, 0, nil, fmt.Errorf("%w: %s data is not a sync(9) request", ErrMalformed, m.Type)
		}
		return zab.MsgRequest, zxid.None, data, nil
	case zab.MsgProposal, zab.MsgInform, zab.MsgPing:
		return m.Type, m.Zxid, m.Data, nil
	case zab.MsgCommitAndActivate:
		return m.Type, m.Zxid, binary.BigEndian.AppendUint64(nil, uint64(m.Designated)), nil
	case zab.MsgInformAndActivate:
		data := make([]byte, designatedBytes, designatedBytes+len(m.Data))
		binary.BigEndian.PutUint64(data, uint64(m.Designated))
		return m.Type, m.Zxid, append(data, m.Data...), nil
	case zab.MsgRevalidate:
		if !revalidateSize(len(m.Data)) {
			return 0, 0, nil, fmt.Errorf("%w: REVALIDATE data of %d bytes", ErrMalformed, len(m.Data))
		}
		return m.Type, zxid.None, m.Data, nil
	case zab.MsgAck, zab.MsgCommit, zab.MsgDiff, zab.MsgTrunc, zab.MsgSnap:
		return m.Type, m.Zxid, nil, nil
	case zab.MsgSync:
		return m.Type, 0, nil, nil
	case zab.MsgUpToDate:
		return m.Type, zxid.None, nil, nil
	case zab.MsgNewLeader:
		config := m.Data
		if config == nil {
			config = []byte{} // no dynamic configuration (zab has no ReconfigCodec)
		}
		return m.Type, m.Zxid, config, nil
	case zab.MsgFollowerInfo, zab.MsgObserverInfo:
		return learnerInfoFields(m)
	case zab.MsgLeaderInfo:
		return m.Type, m.Zxid, binary.BigEndian.AppendUint32(nil, uint32(versionOf(m.Dialect))), nil
	case zab.MsgAckEpoch:
		if m.Epoch < -1 || m.Epoch > math.MaxInt32 {
			return 0, 0, nil, fmt.Errorf("%w: ACKEPOCH epoch %d does not fit an int", ErrMalformed, m.Epoch)
		}
		return m.Type, m.Zxid, binary.BigEndian.AppendUint32(nil, uint32(int32(m.Epoch))), nil
	}
	return 0, 0, nil, fmt.Errorf("%w: %s", ErrUnsupported, m.Type)
}

// learnerInfoFields encodes FOLLOWERINFO/OBSERVERINFO: zxid acceptedEpoch<<32
// and LearnerInfo{long serverid; int protocolVersion; long configVersion},
// the version of the learner's active configuration (0 for a static one,
// as ZooKeeper sends it).
func learnerInfoFields(m zab.Message) (zab.MsgType, zxid.ID, []byte, error) {
	if m.Epoch < 0 || m.Epoch > math.MaxUint32 {
		return 0, 0, nil, fmt.Errorf("%w: %s accepted epoch %d out of range", ErrMalformed, m.Type, m.Epoch)
	}
	if m.From <= 0 {
		return 0, 0, nil, fmt.Errorf("%w: %s from server id %d", ErrMalformed, m.Type, m.From)
	}
	e := jute.Encoder{B: make([]byte, 0, learnerInfoV2)}
	e.Long(int64(m.From))
	e.Int(versionOf(m.Dialect))
	e.Long(int64(m.ConfigVersion))
	return m.Type, zxid.Make(zxid.Epoch(m.Epoch), 0), e.B, nil
}

// versionOf is the protocol version that announces d.
func versionOf(d zab.Dialect) int32 {
	if d == zab.DialectKeeper {
		return keeperZabVersion
	}
	return zabVersion
}

// dialectOf is the dialect a protocol version announces.
func dialectOf(version int32) zab.Dialect {
	if version == keeperZabVersion {
		return zab.DialectKeeper
	}
	return zab.DialectZooKeeper
}

// checkAuthInfo verifies that b is exactly one jute vector<Id>.
func checkAuthInfo(b []byte) error {
	r := bytes.NewReader(b)
	w := wireReader{r: r, budget: int64(len(b))}
	w.skipAuthInfo()
	if w.err != nil {
		return fmt.Errorf("%w: REQUEST authinfo: %w", ErrMalformed, w.err)
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %w: %d bytes after the REQUEST authinfo", ErrMalformed, jute.ErrTrailing, r.Len())
	}
	return nil
}

// revalidateSize reports whether n is the size of REVALIDATE data: a
// learner's {long sessionId; int timeout} or the leader's {long
// sessionId; boolean valid}.
func revalidateSize(n int) bool { return n == 8+4 || n == 8+1 }

// isSyncRequest reports whether REQUEST data is a forwarded sync(9).
func isSyncRequest(data []byte) bool {
	return len(data) >= requestHeaderBytes && int32(binary.BigEndian.Uint32(data[12:16])) == int32(zkproto.OpSync)
}

// DecodeQuorumPacket decodes one QuorumPacket, which must fill b exactly;
// for SNAP, b also holds the snapshot body and signature that follow it,
// and the body is returned in Data. From is set only for FOLLOWERINFO and
// OBSERVERINFO (the server id in LearnerInfo); To is never set.
//
// Fields ZooKeeper fixes (REQUEST's and UPTODATE's zxid -1, SYNC's 0) decode
// to those constants, so decoding what EncodeQuorumPacket produced gives
// back the same message.
func DecodeQuorumPacket(b []byte) (zab.Message, error) {
	r := bytes.NewReader(b)
	m, err := readQuorumPacket(r, defaultLimits)
	switch {
	case err == io.EOF:
		return zab.Message{}, fmt.Errorf("%w: empty input", ErrMalformed)
	case err != nil:
		return zab.Message{}, err
	case r.Len() != 0:
		return zab.Message{}, fmt.Errorf("%w: %w: %d bytes after %s", ErrMalformed, jute.ErrTrailing, r.Len(), m.Type)
	}
	return m, nil
}

// readQuorumPacket reads one QuorumPacket from r (and, after SNAP, the
// snapshot stream). It returns io.EOF if r ends cleanly before the packet.
func readQuorumPacket(r io.Reader, lim limits) (zab.Message, error) {
	w := wireReader{r: r, budget: packetHeaderBytes + int64(lim.dataBytes) + maxAuthInfoBytes, cleanEOF: true}
	typ := w.int32()
	z := zxid.ID(w.int64())
	data := w.buffer(lim.dataBytes)
	var auth bytes.Buffer
	w.tee = &auth
	n := w.skipAuthInfo()
	w.tee = nil
	if w.err != nil {
		return zab.Message{}, w.err
	}
	m, err := messageOf(zab.MsgType(typ), z, data)
	if err == nil && zab.MsgType(typ) == zab.MsgRequest && n > 0 {
		m.AuthInfo = auth.Bytes()
	}
	if err != nil || m.Type != zab.MsgSnap {
		return m, err
	}
	m.Data, err = readSnapshot(r, lim)
	return m, err
}

// messageOf maps a QuorumPacket's fields to a zab message.
func messageOf(typ zab.MsgType, z zxid.ID, data []byte) (zab.Message, error) {
	m := zab.Message{Type: typ, Zxid: z}
	switch typ {
	case zab.MsgRequest:
		m.Zxid = zxid.None
		m.Data = data
		if isSyncRequest(data) {
			m.Type = zab.MsgSyncRequest
			if bytes.Equal(data, canonicalSyncRequest) {
				m.Data = nil
			}
		}
	case zab.MsgProposal, zab.MsgInform, zab.MsgPing:
		m.Data = data
	case zab.MsgCommitAndActivate:
		// ZooKeeper's leader always sends the designated leader; its
		// followers read the first long and ignore the rest. keeper takes
		// exactly the long, so that what it accepts re-encodes the same.
		if len(data) != designatedBytes {
			return zab.Message{}, fmt.Errorf("%w: COMMITANDACTIVATE data of %d bytes, want %d", ErrMalformed, len(data), designatedBytes)
		}
		m.Designated = zab.PeerID(int64(binary.BigEndian.Uint64(data)))
	case zab.MsgInformAndActivate:
		if len(data) < designatedBytes {
			return zab.Message{}, fmt.Errorf("%w: INFORMANDACTIVATE data of %d bytes", ErrMalformed, len(data))
		}
		m.Designated = zab.PeerID(int64(binary.BigEndian.Uint64(data)))
		m.Data = data[designatedBytes:]
	case zab.MsgRevalidate:
		if !revalidateSize(len(data)) {
			return zab.Message{}, fmt.Errorf("%w: REVALIDATE data of %d bytes", ErrMalformed, len(data))
		}
		m.Zxid = zxid.None
		m.Data = data
	case zab.MsgAck, zab.MsgCommit, zab.MsgDiff, zab.MsgTrunc, zab.MsgSnap:
		// ZooKeeper sends no data with these; any sent is ignored, as
		// ZooKeeper's readers do.
	case zab.MsgSync:
		m.Zxid = 0
	case zab.MsgUpToDate:
		m.Zxid = zxid.None
	case zab.MsgNewLeader:
		if len(data) > 0 {
			m.Data = data // the leader's dynamic configuration text
		}
	case zab.MsgFollowerInfo, zab.MsgObserverInfo:
		return learnerInfoMessage(m, data)
	case zab.MsgLeaderInfo:
		if len(data) != 4 {
			return zab.Message{}, fmt.Errorf("%w: LEADERINFO data of %d bytes, want 4", ErrMalformed, len(data))
		}
		m.Dialect = dialectOf(int32(binary.BigEndian.Uint32(data)))
	case zab.MsgAckEpoch:
		if len(data) != 4 {
			return zab.Message{}, fmt.Errorf("%w: ACKEPOCH data of %d bytes, want 4", ErrMalformed, len(data))
		}
		m.Epoch = int64(int32(binary.BigEndian.Uint32(data)))
		if m.Epoch < -1 {
			return zab.Message{}, fmt.Errorf("%w: ACKEPOCH epoch %d", ErrMalformed, m.Epoch)
		}
	default:
		return zab.Message{}, fmt.Errorf("%w: QuorumPacket type %d", ErrUnsupported, int32(typ))
	}
	return m, nil
}

// learnerInfoMessage decodes FOLLOWERINFO/OBSERVERINFO. Like ZooKeeper's
// leader it accepts the three LearnerInfo sizes; the protocol version
// names the dialect, and the config version (0 when absent) goes to
// Message.ConfigVersion. The zxid's counter carries nothing and is dropped.
func learnerInfoMessage(m zab.Message, data []byte) (zab.Message, error) {
	switch len(data) {
	case learnerInfoV0, learnerInfoV1, learnerInfoV2:
	default:
		return zab.Message{}, fmt.Errorf("%w: %s LearnerInfo of %d bytes", ErrMalformed, m.Type, len(data))
	}
	sid := int64(binary.BigEndian.Uint64(data))
	if sid <= 0 {
		return zab.Message{}, fmt.Errorf("%w: %s from server id %d", ErrMalformed, m.Type, sid)
	}
	m.From = zab.PeerID(sid)
	if len(data) >= learnerInfoV1 {
		m.Dialect = dialectOf(int32(binary.BigEndian.Uint32(data[8:12])))
	}
	if len(data) == learnerInfoV2 {
		m.ConfigVersion = zxid.ID(int64(binary.BigEndian.Uint64(data[12:20])))
	}
	m.Epoch = int64(m.Zxid.Epoch())
	m.Zxid = zxid.Make(m.Zxid.Epoch(), 0)
	return m, nil
}

// readSnapshot reads the stream after SNAP: the snapshot body, returned
// as read, then the signature.
func readSnapshot(r io.Reader, lim limits) ([]byte, error) {
	var body bytes.Buffer
	w := wireReader{r: r, budget: lim.snapshotBytes, tee: &body}
	w.snapshotBody(lim.dataBytes)
	if w.err != nil {
		return nil, fmt.Errorf("snapshot body: %w", w.err)
	}
	sw := wireReader{r: r, budget: snapSignatureBytes}
	if sig := sw.string(snapSignatureBytes); sw.err != nil {
		return nil, fmt.Errorf("snapshot signature: %w", sw.err)
	} else if sig != snapSignature {
		return nil, fmt.Errorf("%w: snapshot signature %q", ErrMalformed, sig)
	}
	return body.Bytes(), nil
}

// checkSnapshotBody verifies that body is exactly one snapshot body, so a
// learner can find where it ends.
func checkSnapshotBody(body []byte) error {
	r := bytes.NewReader(body)
	w := wireReader{r: r, budget: int64(len(body))}
	w.snapshotBody(len(body))
	if w.err != nil {
		return fmt.Errorf("%w: SNAP body: %w", ErrMalformed, w.err)
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %w: %d bytes after the SNAP body", ErrMalformed, jute.ErrTrailing, r.Len())
	}
	return nil
}

// wireReader decodes jute values from a stream with a sticky error, as
// jute.Decoder does from a slice. budget is how many more bytes the value
// being read may take; tee, when set, receives every byte read.
type wireReader struct {
	r        io.Reader
	off      int64
	budget   int64
	cleanEOF bool // an EOF before the first byte is io.EOF, not a malformed message
	tee      *bytes.Buffer
	err      error
	scratch  [64]byte
}

func (w *wireReader) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// read fills p.
func (w *wireReader) read(p []byte) bool {
	if w.err != nil {
		return false
	}
	if int64(len(p)) > w.budget {
		w.fail(fmt.Errorf("%w: more than %d bytes", ErrTooLarge, w.off+w.budget))
		return false
	}
	n, err := io.ReadFull(w.r, p)
	w.off += int64(n)
	w.budget -= int64(n)
	if w.tee != nil {
		w.tee.Write(p[:n])
	}
	switch {
	case err == io.EOF && w.off == 0 && w.cleanEOF:
		w.fail(io.EOF)
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		w.fail(fmt.Errorf("%w: %w at byte %d", ErrMalformed, io.ErrUnexpectedEOF, w.off))
	case err != nil:
		w.fail(err)
	}
	return w.err == nil
}

func (w *wireReader) int32() int32 {
	if !w.read(w.scratch[:4]) {
		return 0
	}
	return int32(binary.BigEndian.Uint32(w.scratch[:4]))
}

func (w *wireReader) int64() int64 {
	if !w.read(w.scratch[:8]) {
		return 0
	}
	return int64(binary.BigEndian.Uint64(w.scratch[:8]))
}

// length reads a buffer length or vector count: -1 (null) or 0..maxLen.
func (w *wireReader) length(maxLen int) int {
	at := w.off
	n := w.int32()
	switch {
	case w.err != nil:
		return -1
	case n < -1:
		w.fail(fmt.Errorf("%w: %w: %d at byte %d", ErrMalformed, jute.ErrLength, n, at))
		return -1
	case int64(n) > int64(maxLen):
		w.fail(fmt.Errorf("%w: length %d at byte %d, limit %d", ErrTooLarge, n, at, maxLen))
		return -1
	}
	return int(n)
}

// buffer reads a buffer of at most maxLen bytes: nil for null, else a copy.
func (w *wireReader) buffer(maxLen int) []byte {
	n := w.length(maxLen)
	if n < 0 {
		return nil
	}
	if int64(n) > w.budget {
		w.fail(fmt.Errorf("%w: buffer of %d bytes at byte %d", ErrTooLarge, n, w.off))
		return nil
	}
	// Grow with the bytes that arrive, so a length with nothing behind it
	// costs little.
	p := make([]byte, 0, min(n, growBytes))
	for len(p) < n {
		k := min(n-len(p), max(len(p), growBytes))
		p = append(p, make([]byte, k)...)
		if !w.read(p[len(p)-k:]) {
			return nil
		}
	}
	return p
}

// growBytes is the most buffer allocates ahead of the bytes it has read.
const growBytes = 64 << 10

// string reads a ustring of at most maxLen bytes; null reads as "".
func (w *wireReader) string(maxLen int) string { return string(w.buffer(maxLen)) }

// skip reads n bytes and drops them (tee still sees them).
func (w *wireReader) skip(n int64) {
	for n > 0 && w.err == nil {
		k := min(n, int64(len(w.scratch)))
		w.read(w.scratch[:k])
		n -= k
	}
}

// skipBuffer reads a buffer or ustring of at most maxLen bytes and drops it.
func (w *wireReader) skipBuffer(maxLen int) {
	if n := w.length(maxLen); n > 0 {
		w.skip(int64(n))
	}
}

// skipAuthInfo reads vector<Id{ustring scheme; ustring id}> and drops it
// (tee still sees it). It returns the count, -1 for null.
func (w *wireReader) skipAuthInfo() int {
	n := w.length(maxAuthInfoBytes / 8) // an Id takes at least 8 bytes
	for i := 0; i < n && w.err == nil; i++ {
		w.skipBuffer(maxAuthInfoBytes)
		w.skipBuffer(maxAuthInfoBytes)
	}
	return n
}

// count reads a non-negative int count; the budget bounds what the loop
// over it can read.
func (w *wireReader) count(what string) int {
	at := w.off
	n := w.int32()
	if w.err == nil && n < 0 {
		w.fail(fmt.Errorf("%w: %s count %d at byte %d", ErrMalformed, what, n, at))
	}
	if w.err != nil {
		return 0
	}
	return int(n)
}

// statPersistedBytes is the size of StatPersisted (docs/zookeeper-protocol.md §0.1).
const statPersistedBytes = 60

// snapshotBody walks a snapshot body (docs/zookeeper-protocol.md §10.3 SNAP: the snapshot file of
// §9.4 without header and seals) without interpreting it:
//
//	int count; {long sessionId; int timeout}*count
//	int count; {long ref; vector<ACL{int perms; Id{ustring; ustring}}>}*count
//	{ustring path; buffer data; long aclRef; StatPersisted}* until path "/"
//	ustring "/"
//
// maxLen bounds every buffer and string.
func (w *wireReader) snapshotBody(maxLen int) {
	for n := w.count("session"); n > 0 && w.err == nil; n-- {
		w.skip(8 + 4)
	}
	for n := w.count("ACL cache"); n > 0 && w.err == nil; n-- {
		w.skip(8)
		for k := w.length(maxLen); k > 0 && w.err == nil; k-- {
			w.skip(4)
			w.skipBuffer(maxLen)
			w.skipBuffer(maxLen)
		}
	}
	for w.err == nil {
		if path := w.string(maxLen); path == "/" || w.err != nil {
			return
		}
		w.skipBuffer(maxLen)
		w.skip(8 + statPersistedBytes)
	}
}
