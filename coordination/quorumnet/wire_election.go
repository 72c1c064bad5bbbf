package quorumnet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"keeper/coordination/jute"
	"keeper/coordination/zab"
	"keeper/coordination/zxid"
)

// Election port formats (docs/zookeeper-protocol.md §10.1, §10.2).
const (
	// handshakeV1 and handshakeV2 open an election connection: V1 carries
	// one address, V2 several separated by '|'. We send V1, as ZooKeeper
	// does unless multi-address support is enabled.
	handshakeV1 int64 = -65536
	handshakeV2 int64 = -65535
	// maxHandshakeAddrBytes is ZooKeeper's bound on the handshake's
	// address text.
	maxHandshakeAddrBytes = 2048

	// notificationVersion is the notification format we send: with peer
	// epoch, version and the sender's dynamic configuration.
	notificationVersion = 2
	// Notification sizes: 28 bytes before ZooKeeper 3.4 (no peer epoch),
	// 40 bytes in 3.4 (peer epoch and a version of 1), and 44 bytes plus
	// the configuration text since 3.5.
	notification28, notification40, notificationV2 = 28, 40, 44
)

// EncodeNotification returns the payload of an election message for a
// MsgNotification (docs/zookeeper-protocol.md §10.2, version 2):
//
//	int state; long leader; long zxid; long electionEpoch; long peerEpoch;
//	int version = 2; int configLength; configLength bytes of m.Data
//
// m.Data is the sender's active configuration text (empty without one).
// The frame length that precedes it on the wire is not included.
func EncodeNotification(m zab.Message) ([]byte, error) {
	if m.Type != zab.MsgNotification {
		return nil, fmt.Errorf("%w: %s on the election port", ErrUnsupported, m.Type)
	}
	if m.State > zab.Observing {
		return nil, fmt.Errorf("%w: notification state %d", ErrMalformed, m.State)
	}
	e := jute.Encoder{B: make([]byte, 0, notificationV2)}
	e.Int(int32(m.State))
	e.Long(int64(m.Vote.Leader))
	e.Long(int64(m.Vote.Zxid))
	e.Long(int64(m.Round))
	e.Long(int64(m.Vote.Epoch))
	e.Int(notificationVersion)
	if len(e.B)+4+len(m.Data) > MaxElectionFrameBytes {
		return nil, fmt.Errorf("%w: notification configuration of %d bytes", ErrTooLarge, len(m.Data))
	}
	// ZooKeeper writes an empty text, never a null buffer.
	e.Int(int32(len(m.Data)))
	e.B = append(e.B, m.Data...)
	return e.B, nil
}

// javaNoEpoch is the peer epoch (and the proposed leader and zxid) that an
// Apache ZooKeeper observer sends in its notifications: Long.MIN_VALUE, as
// it is not a participant (docs/zookeeper-protocol.md §10.2).
const javaNoEpoch = math.MinInt64

// DecodeNotification decodes an election message payload in any of the
// three formats ZooKeeper has used: 28 bytes (the peer epoch is then the
// epoch of the zxid), 40 bytes, or version 2 and later with a configuration,
// returned in Data (nil when empty). From and To are left for the caller,
// who knows the connection.
func DecodeNotification(b []byte) (zab.Message, error) {
	d := jute.NewDecoder(b, MaxElectionFrameBytes)
	state := d.Int()
	m := zab.Message{Type: zab.MsgNotification}
	m.Vote.Leader = zab.PeerID(d.Long())
	m.Vote.Zxid = zxid.ID(d.Long())
	m.Round = uint64(d.Long())
	if err := d.Err(); err != nil {
		return zab.Message{}, fmt.Errorf("%w: notification: %w", ErrMalformed, err)
	}
	if state < int32(zab.Looking) || state > int32(zab.Observing) {
		return zab.Message{}, fmt.Errorf("%w: notification state %d", ErrMalformed, state)
	}
	m.State = zab.Role(state)
	if len(b) == notification28 {
		m.Vote.Epoch = m.Vote.Zxid.Epoch()
		return m, nil
	}
	peerEpoch := d.Long()
	version := d.Int()
	if len(b) != notification40 {
		if version < notificationVersion {
			return zab.Message{}, fmt.Errorf("%w: notification of %d bytes with version %d", ErrMalformed, len(b), version)
		}
		config := d.Buffer() // the sender's dynamic configuration
		if config == nil && d.Err() == nil {
			d.Fail(fmt.Errorf("%w: null configuration", jute.ErrLength))
		}
		if len(config) > 0 {
			m.Data = config
		}
	}
	if err := d.Finish(); err != nil {
		return zab.Message{}, fmt.Errorf("%w: notification of %d bytes: %w", ErrMalformed, len(b), err)
	}
	switch {
	case peerEpoch == javaNoEpoch:
		// A Java observer's vote: it takes no part in the election and
		// asks only who leads; zab answers a non-voter whatever it says.
		m.Vote.Epoch = 0
	case peerEpoch < 0 || peerEpoch > math.MaxUint32:
		return zab.Message{}, fmt.Errorf("%w: notification peer epoch %d", ErrMalformed, peerEpoch)
	default:
		m.Vote.Epoch = zxid.Epoch(peerEpoch)
	}
	return m, nil
}

// EncodeElectionHandshake returns what the dialling side of an election
// connection sends first (docs/zookeeper-protocol.md §10.1, protocol version -65536):
//
//	long -65536; long sid; int length; length bytes of "host:port"
func EncodeElectionHandshake(sid zab.PeerID, addr string) ([]byte, error) {
	if len(addr) == 0 || len(addr) > maxHandshakeAddrBytes {
		return nil, fmt.Errorf("%w: handshake address of %d bytes", ErrMalformed, len(addr))
	}
	e := jute.Encoder{B: make([]byte, 0, 20+len(addr))}
	e.Long(handshakeV1)
	e.Long(int64(sid))
	e.String(addr)
	return e.B, nil
}

// DecodeElectionHandshake decodes an election handshake that fills b
// exactly. A first long that is not negative is the sid of a peer older
// than ZooKeeper 3.5, which sends nothing else; addr is then "".
func DecodeElectionHandshake(b []byte) (sid zab.PeerID, addr string, err error) {
	r := bytes.NewReader(b)
	sid, addr, err = readElectionHandshake(r)
	if err == nil && r.Len() != 0 {
		err = fmt.Errorf("%w: %w: %d bytes after the handshake", ErrMalformed, jute.ErrTrailing, r.Len())
	}
	return sid, addr, err
}

// readElectionHandshake reads a handshake from the stream. The address is
// returned as sent: a V2 handshake may list several, separated by '|'.
func readElectionHandshake(r io.Reader) (zab.PeerID, string, error) {
	w := wireReader{r: r, budget: 20 + maxHandshakeAddrBytes}
	version := w.int64()
	if w.err == nil && version >= 0 {
		return zab.PeerID(version), "", nil
	}
	if w.err == nil && version != handshakeV1 && version != handshakeV2 {
		w.fail(fmt.Errorf("%w: election protocol version %d", ErrMalformed, version))
	}
	sid := w.int64()
	at := w.off
	n := w.int32()
	if w.err == nil && (n <= 0 || n > maxHandshakeAddrBytes) {
		w.fail(fmt.Errorf("%w: handshake address length %d at byte %d", ErrMalformed, n, at))
	}
	var addr []byte
	if w.err == nil {
		addr = make([]byte, n)
		w.read(addr)
	}
	if w.err != nil {
		return 0, "", fmt.Errorf("election handshake: %w", w.err)
	}
	return zab.PeerID(sid), string(addr), nil
}

// appendElectionFrame appends an election message: int length, payload.
func appendElectionFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// readElectionFrame reads one election message payload into buf (grown as
// needed) and returns it. It returns io.EOF at a clean end of stream.
func readElectionFrame(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("%w: %w in a frame length", ErrMalformed, err)
		}
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	switch {
	case n <= 0:
		return nil, fmt.Errorf("%w: election frame of %d bytes", ErrMalformed, n)
	case n > MaxElectionFrameBytes:
		return nil, fmt.Errorf("%w: election frame of %d bytes", ErrTooLarge, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = fmt.Errorf("%w: %w in a %d-byte frame", ErrMalformed, io.ErrUnexpectedEOF, n)
		}
		return nil, err
	}
	return buf, nil
}
