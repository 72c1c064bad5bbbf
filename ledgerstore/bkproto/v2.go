package bkproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"
)

// BookKeeper's v2 protocol (docs/bookkeeper-protocol.md §6.2) is translated
// to and from the v3 messages, so that a bookie and a client handle both
// protocols with the same code: DecodeV2Request turns a v2 request into the
// v3 Request it means, and AppendV2Response encodes the v3 Response the
// bookie built in the v2 layout; AppendV2Request and DecodeV2Response do
// the same for a client. Only what v2 can express survives the trip.
//
// A v2 packet starts with a 32-bit header, then an operation's fields, all
// big-endian, inside the same 4-byte length framing as v3:
//
//	bit 31      24 23      16 15                 0
//	+------------+----------+--------------------+
//	| version(8) | opCode(8)|      flags(16)     |
//	+------------+----------+--------------------+
//
//	add request    header | masterKey(20) | entry (its stored form: ledgerId and entryId come from it)
//	read request   header | ledgerId(8) | entryId(8) | masterKey(20) if DO_FENCING and version >= 2
//	batch read     header | ledgerId(8) | startEntryId(8) | requestId(8) | maxCount(4) | maxSize(8)
//	               | masterKey(20) if DO_FENCING and version >= 2
//	auth request   header | AuthMessage (protobuf)
//	add response   header | rc(4) | ledgerId(8) | entryId(8)
//	read response  header | rc(4) | ledgerId(8) | entryId(8) | entry if rc = EOK
//	batch response header | rc(4) | ledgerId(8) | startEntryId(8) | requestId(8) | { length(4) | entry }...
//	auth response  header | AuthMessage (protobuf)
//
// Version 0 (the oldest clients) has no version or flags: the whole header
// is the opcode. A response repeats the request's version, opcode, ledger
// and entry ids (an auth response always says version 2); its flags are 0.

// V2OpCode is a v2 packet's operation.
type V2OpCode int8

// The v2 opcodes. A bookie decodes only ADDENTRY, READENTRY, AUTH and
// (from BookKeeper 4.17) BATCH_READ_ENTRY; READ_LAC, WRITE_LAC and
// GET_BOOKIE_INFO are numbered but have no v2 layout: BookKeeper's v2
// client sends those operations over a v3 connection.
const (
	V2AddEntry       V2OpCode = 1
	V2ReadEntry      V2OpCode = 2
	V2Auth           V2OpCode = 3
	V2ReadLAC        V2OpCode = 4
	V2WriteLAC       V2OpCode = 5
	V2GetBookieInfo  V2OpCode = 6
	V2BatchReadEntry V2OpCode = 7
)

// V2Flags is a v2 header's flag bits.
type V2Flags uint16

// The v2 flags. Bits a request does not use are ignored, as BookKeeper
// ignores them.
const (
	V2FlagDoFencing    V2Flags = 0x0001 // read: fence the ledger (with the master key)
	V2FlagRecoveryAdd  V2Flags = 0x0002 // add: accepted on a fenced ledger
	V2FlagHighPriority V2Flags = 0x0004 // recovery traffic; a read-only bookie may still take it
)

// V2 protocol versions: BookKeeper's bookie serves versions
// V2LowestVersion..V2CurrentVersion and answers others with EBADVERSION.
const (
	V2LowestVersion  int8 = 0
	V2CurrentVersion int8 = 2
)

// V2ResponseHeaderBytes is the fixed part of an add or read response:
// header, rc, ledgerId and entryId. An add response is exactly this long.
const V2ResponseHeaderBytes = 24

// v2HeaderBytes is the size of the packet header.
const v2HeaderBytes = 4

// V2Header is a v2 packet header.
type V2Header struct {
	Version int8
	OpCode  V2OpCode
	Flags   V2Flags
}

// ParseV2Header splits a packet header. For version 0 the whole int is the
// opcode (its low byte) and there are no flags.
func ParseV2Header(v uint32) V2Header {
	version := int8(v >> 24)
	if version == 0 {
		return V2Header{OpCode: V2OpCode(int8(v))}
	}
	return V2Header{Version: version, OpCode: V2OpCode(int8(v >> 16)), Flags: V2Flags(v)}
}

// Uint32 is the header as it travels.
func (h V2Header) Uint32() uint32 {
	if h.Version == 0 {
		return uint32(int32(h.OpCode))
	}
	return uint32(uint8(h.Version))<<24 | uint32(uint8(h.OpCode))<<16 | uint32(h.Flags)
}

// V2Request is what a v2 response repeats of its request, and the
// fields of a batch read that its v3 form (a READ_ENTRY of the first entry)
// cannot carry.
type V2Request struct {
	Header   V2Header
	LedgerID int64 // -1 for AUTH
	EntryID  int64 // -1 for AUTH; a batch read's first entry
	// A BATCH_READ_ENTRY's request id (repeated in the response), and its
	// bounds: at most MaxCount entries (<= 0: no bound) in a response of
	// at most MaxSize bytes, the first entry always included.
	RequestID int64
	MaxCount  int32
	MaxSize   int64
}

// V2BatchFixedBytes is the fixed part of a batch read response, as
// BookKeeper counts it against maxSize: the response header (24 bytes),
// the request id and the frame length.
const V2BatchFixedBytes = V2ResponseHeaderBytes + 8 + 4

// ErrV2Malformed means a v2 packet could not be decoded: too short for its
// operation, an opcode without a v2 layout, an undecodable auth message, or
// an unknown return code. BookKeeper closes the connection on such a
// packet, and so do keeper's bookie and client.
var ErrV2Malformed = errors.New("bkproto: malformed v2 packet")

// ErrNoV2Form means a request or response has no v2 encoding: an operation
// other than ADD_ENTRY, READ_ENTRY or AUTH, deferred-sync write flags, or
// fields v2 cannot carry.
var ErrNoV2Form = errors.New("bkproto: no v2 form")

// The v2 return codes, in the order of the v3 statuses they stand for.
var v2Codes = [...]struct {
	status StatusCode
	rc     int32
}{
	{StatusCode_EOK, 0},
	{StatusCode_ENOLEDGER, 1},
	{StatusCode_ENOENTRY, 2},
	{StatusCode_EBADREQ, 100},
	{StatusCode_EIO, 101},
	{StatusCode_EUA, 102},
	{StatusCode_EBADVERSION, 103},
	{StatusCode_EFENCED, 104},
	{StatusCode_EREADONLY, 105},
	{StatusCode_ETOOMANYREQUESTS, 106},
	{StatusCode_EUNKNOWNLEDGERSTATE, 107},
}

// V2Code returns the v2 return code of a status. A status v2 has no code
// for is reported as EIO: outcome unknown, never an absence.
func V2Code(s StatusCode) int32 {
	for _, c := range v2Codes {
		if c.status == s {
			return c.rc
		}
	}
	return 101
}

// StatusOfV2Code returns the status a v2 return code stands for; ok is
// false for a code the protocol does not define.
func StatusOfV2Code(rc int32) (s StatusCode, ok bool) {
	for _, c := range v2Codes {
		if c.rc == rc {
			return c.status, true
		}
	}
	return 0, false
}

// DecodeV2Request decodes one v2 request frame (without its length prefix)
// into the v3 Request it stands for, as a bookie handles it: version 3 in
// the header, RECOVERY_ADD and FENCE_LEDGER for the flags, priority
// ledger.HighPriority's 100 for HIGH_PRIORITY. v2 is what the response must
// repeat. The error tells the caller what to do, as DecodeRequest's does:
//
//   - wrapping ErrV2Malformed: the frame cannot be decoded (see there); req
//     is nil and the connection should be closed;
//   - an *Error: req (non-nil, header set) is malformed and gets that
//     status: EBADVERSION for an add or read whose version is outside
//     V2LowestVersion..V2CurrentVersion, otherwise what ValidateRequest
//     says of the translated request (EUA for a fencing read without a
//     master key, which only versions below 2 can send; EBADREQ for an
//     entry shorter than its header, ...).
//
// The request's byte fields are copies: frame may be reused after the
// call.
func DecodeV2Request(frame []byte) (*Request, V2Request, error) {
	v2 := V2Request{LedgerID: -1, EntryID: -1}
	if len(frame) < v2HeaderBytes {
		return nil, v2, fmt.Errorf("%w: %d bytes", ErrV2Malformed, len(frame))
	}
	v2.Header = ParseV2Header(binary.BigEndian.Uint32(frame))
	rest := frame[v2HeaderBytes:]
	h, flags := v2.Header, v2.Header.Flags
	var req *Request
	switch h.OpCode {
	case V2AddEntry:
		if len(rest) < MasterKeyBytes+16 {
			return nil, v2, fmt.Errorf("%w: add of %d bytes", ErrV2Malformed, len(frame))
		}
		body := rest[MasterKeyBytes:]
		v2.LedgerID = int64(binary.BigEndian.Uint64(body))
		v2.EntryID = int64(binary.BigEndian.Uint64(body[8:]))
		add := &AddRequest{LedgerId: proto.Int64(v2.LedgerID), EntryId: proto.Int64(v2.EntryID),
			MasterKey: slices.Clone(rest[:MasterKeyBytes]), Body: slices.Clone(body)}
		if flags&V2FlagRecoveryAdd != 0 {
			add.Flag = AddRequest_RECOVERY_ADD.Enum()
		}
		req = &Request{Header: NewHeader(OperationType_ADD_ENTRY, 0), AddRequest: add}
	case V2ReadEntry:
		if len(rest) < 16 {
			return nil, v2, fmt.Errorf("%w: read of %d bytes", ErrV2Malformed, len(frame))
		}
		v2.LedgerID = int64(binary.BigEndian.Uint64(rest))
		v2.EntryID = int64(binary.BigEndian.Uint64(rest[8:]))
		read := &ReadRequest{LedgerId: proto.Int64(v2.LedgerID), EntryId: proto.Int64(v2.EntryID)}
		if flags&V2FlagDoFencing != 0 {
			read.Flag = ReadRequest_FENCE_LEDGER.Enum()
			if h.Version >= 2 {
				if len(rest) < 16+MasterKeyBytes {
					return nil, v2, fmt.Errorf("%w: fencing read of %d bytes", ErrV2Malformed, len(frame))
				}
				read.MasterKey = slices.Clone(rest[16 : 16+MasterKeyBytes])
			}
		}
		req = &Request{Header: NewHeader(OperationType_READ_ENTRY, 0), ReadRequest: read}
	case V2BatchReadEntry:
		const fixed = 8 + 8 + 8 + 4 + 8
		if len(rest) < fixed {
			return nil, v2, fmt.Errorf("%w: batch read of %d bytes", ErrV2Malformed, len(frame))
		}
		v2.LedgerID = int64(binary.BigEndian.Uint64(rest))
		v2.EntryID = int64(binary.BigEndian.Uint64(rest[8:]))
		v2.RequestID = int64(binary.BigEndian.Uint64(rest[16:]))
		v2.MaxCount = int32(binary.BigEndian.Uint32(rest[24:]))
		v2.MaxSize = int64(binary.BigEndian.Uint64(rest[28:]))
		read := &ReadRequest{LedgerId: proto.Int64(v2.LedgerID), EntryId: proto.Int64(v2.EntryID)}
		if flags&V2FlagDoFencing != 0 {
			read.Flag = ReadRequest_FENCE_LEDGER.Enum()
			if h.Version >= 2 {
				if len(rest) < fixed+MasterKeyBytes {
					return nil, v2, fmt.Errorf("%w: fencing batch read of %d bytes", ErrV2Malformed, len(frame))
				}
				read.MasterKey = slices.Clone(rest[fixed : fixed+MasterKeyBytes])
			}
		}
		// Its v3 form is a read of the first entry: the bookie runs the same
		// checks and fence, and reads the batch where it would read that entry.
		req = &Request{Header: NewHeader(OperationType_READ_ENTRY, 0), ReadRequest: read}
	case V2Auth:
		am := &AuthMessage{}
		if err := proto.Unmarshal(rest, am); err != nil {
			return nil, v2, fmt.Errorf("%w: auth message: %v", ErrV2Malformed, err)
		}
		// BookKeeper answers AUTH whatever the version.
		return &Request{Header: NewHeader(OperationType_AUTH, 0), AuthRequest: am}, v2, nil
	default:
		return nil, v2, fmt.Errorf("%w: opcode %d", ErrV2Malformed, h.OpCode)
	}
	if flags&V2FlagHighPriority != 0 {
		req.Header.Priority = proto.Uint32(v2HighPriority)
	}
	if h.Version < V2LowestVersion || h.Version > V2CurrentVersion {
		return req, v2, Errorf(StatusCode_EBADVERSION, "v2 protocol version %d", h.Version)
	}
	if err := ValidateRequest(req); err != nil {
		return req, v2, err
	}
	return req, v2, nil
}

// v2HighPriority is the v3 priority HIGH_PRIORITY stands for: what the
// Java client sends for recovery traffic.
const v2HighPriority = 100

// AppendV2Response appends, with its length prefix, the v2 form of a
// bookie's response resp to the v2 request v2 and returns the extended
// slice. The status is ResponseStatus(resp) as a v2 code; a read response
// carries the entry only with EOK; a batch read response carries, with EOK,
// ReadResponse.body as it is: the bookie puts the batch's entries there,
// each after its 4-byte length (AppendV2BatchEntry); the bookie-known LAC (maxLAC) has no
// place in v2 and is dropped: a v2 client learns the LAC from the header of
// the entries it reads. It fails with ErrNoV2Form for an operation v2 does
// not answer, or an AUTH response without its message.
func AppendV2Response(dst []byte, v2 V2Request, resp *Response) ([]byte, error) {
	start := len(dst)
	h := V2Header{Version: v2.Header.Version, OpCode: v2.Header.OpCode}
	switch v2.Header.OpCode {
	case V2AddEntry, V2ReadEntry:
		st := ResponseStatus(resp)
		var body []byte
		if v2.Header.OpCode == V2ReadEntry && st == StatusCode_EOK {
			body = resp.GetReadResponse().GetBody()
		}
		n := V2ResponseHeaderBytes + len(body)
		if n > math.MaxInt32 {
			return dst, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = binary.BigEndian.AppendUint32(dst, h.Uint32())
		dst = binary.BigEndian.AppendUint32(dst, uint32(V2Code(st)))
		dst = binary.BigEndian.AppendUint64(dst, uint64(v2.LedgerID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(v2.EntryID))
		return append(dst, body...), nil
	case V2BatchReadEntry:
		st := ResponseStatus(resp)
		var body []byte
		if st == StatusCode_EOK {
			body = resp.GetReadResponse().GetBody()
		}
		n := V2ResponseHeaderBytes + 8 + len(body)
		if n > math.MaxInt32 {
			return dst, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = binary.BigEndian.AppendUint32(dst, h.Uint32())
		dst = binary.BigEndian.AppendUint32(dst, uint32(V2Code(st)))
		dst = binary.BigEndian.AppendUint64(dst, uint64(v2.LedgerID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(v2.EntryID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(v2.RequestID))
		return append(dst, body...), nil
	case V2Auth:
		if resp.GetAuthResponse() == nil {
			return dst, fmt.Errorf("%w: auth response without a message", ErrNoV2Form)
		}
		h.Version = V2CurrentVersion
		return appendV2Message(dst[:start], h, resp.AuthResponse)
	}
	return dst, fmt.Errorf("%w: opcode %d", ErrNoV2Form, v2.Header.OpCode)
}

// AppendV2BatchEntry appends one entry of a batch read response to a
// batch body: its 4-byte length, then the entry.
func AppendV2BatchEntry(body, entry []byte) []byte {
	body = binary.BigEndian.AppendUint32(body, uint32(len(entry)))
	return append(body, entry...)
}

// appendV2Message appends a frame of header h and the marshalled m.
func appendV2Message(dst []byte, h V2Header, m proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, h.Uint32())
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return dst[:start], fmt.Errorf("bkproto: marshal %T: %w", m, err)
	}
	n := len(dst) - start - FrameLengthBytes
	if n > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// V2RequestOf returns what the v2 form of a client's v3 request req
// carries, for matching its response: a v2 response names no transaction,
// only its opcode, ledger and entry. ok is false if req has no v2 form.
func V2RequestOf(req *Request) (v2 V2Request, ok bool) {
	v2 = V2Request{Header: V2Header{Version: V2CurrentVersion}, LedgerID: -1, EntryID: -1}
	switch {
	case req.AddRequest != nil:
		v2.Header.OpCode = V2AddEntry
		v2.LedgerID, v2.EntryID = req.AddRequest.GetLedgerId(), req.AddRequest.GetEntryId()
	case req.ReadRequest != nil:
		v2.Header.OpCode = V2ReadEntry
		v2.LedgerID, v2.EntryID = req.ReadRequest.GetLedgerId(), req.ReadRequest.GetEntryId()
	case req.AuthRequest != nil:
		v2.Header.OpCode = V2Auth
	default:
		return v2, false
	}
	return v2, true
}

// AppendV2Request appends, with its length prefix, the v2 form of a
// client's v3 request to dst, as BookKeeper's client sends it with
// useV2WireProtocol: ADD_ENTRY (RECOVERY_ADD as the flag of that name),
// READ_ENTRY (FENCE_LEDGER as DO_FENCING with the master key) and AUTH, at
// version 2, a header priority above 0 as HIGH_PRIORITY. A read's long-poll
// fields (previousLAC, timeOut, ENTRY_PIGGYBACK) have no v2 form and are
// dropped: the read becomes a plain one, which the bookie answers at once,
// as BookKeeper's client sends it. Other operations, deferred-sync write
// flags, a master key that is not 20 bytes and an entry that does not name
// the add's ledger and entry fail with ErrNoV2Form.
func AppendV2Request(dst []byte, req *Request) ([]byte, error) {
	h := V2Header{Version: V2CurrentVersion}
	if req.GetHeader().GetPriority() > 0 {
		h.Flags |= V2FlagHighPriority
	}
	start := len(dst)
	switch {
	case req.AddRequest != nil:
		a := req.AddRequest
		h.OpCode = V2AddEntry
		if a.GetWriteFlags() != 0 {
			return dst, fmt.Errorf("%w: write flags %#x", ErrNoV2Form, a.GetWriteFlags())
		}
		if len(a.MasterKey) != MasterKeyBytes {
			return dst, fmt.Errorf("%w: master key of %d bytes", ErrNoV2Form, len(a.MasterKey))
		}
		if len(a.Body) < 16 || int64(binary.BigEndian.Uint64(a.Body)) != a.GetLedgerId() ||
			int64(binary.BigEndian.Uint64(a.Body[8:])) != a.GetEntryId() {
			return dst, fmt.Errorf("%w: the entry does not name ledger %d entry %d", ErrNoV2Form,
				a.GetLedgerId(), a.GetEntryId())
		}
		if a.Flag != nil && *a.Flag == AddRequest_RECOVERY_ADD {
			h.Flags |= V2FlagRecoveryAdd
		}
		n := v2HeaderBytes + MasterKeyBytes + len(a.Body)
		if n > math.MaxInt32 {
			return dst, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = binary.BigEndian.AppendUint32(dst, h.Uint32())
		dst = append(dst, a.MasterKey...)
		return append(dst, a.Body...), nil
	case req.ReadRequest != nil:
		r := req.ReadRequest
		h.OpCode = V2ReadEntry
		fence := r.Flag != nil && *r.Flag == ReadRequest_FENCE_LEDGER
		n := v2HeaderBytes + 16
		if fence {
			if len(r.MasterKey) != MasterKeyBytes {
				return dst, fmt.Errorf("%w: fencing read with a master key of %d bytes", ErrNoV2Form, len(r.MasterKey))
			}
			h.Flags |= V2FlagDoFencing
			n += MasterKeyBytes
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(n))
		dst = binary.BigEndian.AppendUint32(dst, h.Uint32())
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.GetLedgerId()))
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.GetEntryId()))
		if fence {
			dst = append(dst, r.MasterKey...)
		}
		return dst, nil
	case req.AuthRequest != nil:
		h.OpCode = V2Auth
		h.Flags = 0
		return appendV2Message(dst[:start], h, req.AuthRequest)
	}
	return dst, fmt.Errorf("%w: %v", ErrNoV2Form, req.GetHeader().GetOperation())
}

// AppendV2BatchReadRequest appends, with its length prefix, the
// BATCH_READ_ENTRY (BookKeeper 4.17) that asks for entries from req's entry
// on: req is a READ_ENTRY as AppendV2Request takes it (FENCE_LEDGER with
// the master key as DO_FENCING, a priority as HIGH_PRIORITY, long-poll
// fields dropped); the bookie answers with at most maxCount entries
// (<= 0: no bound) in at most maxSize bytes, counted as it counts them
// (V2BatchFixedBytes, then each entry and its length), the first entry
// always included. requestID comes back in the response and is what
// matches it to its request. Anything but a READ_ENTRY, or a fencing read
// without a 20-byte master key, fails with ErrNoV2Form.
func AppendV2BatchReadRequest(dst []byte, req *Request, requestID int64, maxCount int32, maxSize int64) ([]byte, error) {
	r := req.GetReadRequest()
	if r == nil || req.AddRequest != nil || req.AuthRequest != nil {
		return dst, fmt.Errorf("%w: batch read of %v", ErrNoV2Form, req.GetHeader().GetOperation())
	}
	h := V2Header{Version: V2CurrentVersion, OpCode: V2BatchReadEntry}
	if req.GetHeader().GetPriority() > 0 {
		h.Flags |= V2FlagHighPriority
	}
	fence := r.Flag != nil && *r.Flag == ReadRequest_FENCE_LEDGER
	n := v2HeaderBytes + 8 + 8 + 8 + 4 + 8
	if fence {
		if len(r.MasterKey) != MasterKeyBytes {
			return dst, fmt.Errorf("%w: fencing batch read with a master key of %d bytes", ErrNoV2Form, len(r.MasterKey))
		}
		h.Flags |= V2FlagDoFencing
		n += MasterKeyBytes
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, h.Uint32())
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.GetLedgerId()))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.GetEntryId()))
	dst = binary.BigEndian.AppendUint64(dst, uint64(requestID))
	dst = binary.BigEndian.AppendUint32(dst, uint32(maxCount))
	dst = binary.BigEndian.AppendUint64(dst, uint64(maxSize))
	if fence {
		dst = append(dst, r.MasterKey...)
	}
	return dst, nil
}

// V2BatchEntries splits the body of a batch read response (a READ_ENTRY
// response DecodeV2Response made of a BATCH_READ_ENTRY answer) into its
// entries, each still to be verified against its digest. The entries alias
// body. A length that runs past the end wraps ErrV2Malformed: BookKeeper's
// client cannot decode such a response either.
func V2BatchEntries(body []byte) ([][]byte, error) {
	var out [][]byte
	for len(body) > 0 {
		if len(body) < 4 {
			return out, fmt.Errorf("%w: %d bytes left in a batch", ErrV2Malformed, len(body))
		}
		n := binary.BigEndian.Uint32(body)
		body = body[4:]
		if uint64(n) > uint64(len(body)) {
			return out, fmt.Errorf("%w: batch entry of %d bytes, %d left", ErrV2Malformed, n, len(body))
		}
		out = append(out, body[:n:n])
		body = body[n:]
	}
	return out, nil
}

// DecodeV2Response decodes one v2 response frame (without its length
// prefix) into the v3 Response it stands for, as a client handles it: the
// header (version 3, transaction 0) names the operation; an add or read
// response has its status both overall and in its sub-response, with the
// ledger and entry ids it names; a read's body (the entry, with EOK only)
// aliases frame. A BATCH_READ_ENTRY response decodes as the READ_ENTRY
// response of its first entry whose header's transaction is the request
// id and whose body, with EOK, is the batch (V2BatchEntries splits it).
// Its error wraps ErrV2Malformed for a frame too short for
// its operation, an opcode v2 does not answer with, an undecodable auth
// message or an unknown return code; the connection should then be closed,
// as BookKeeper's client closes it.
func DecodeV2Response(frame []byte) (*Response, error) {
	if len(frame) < v2HeaderBytes {
		return nil, fmt.Errorf("%w: response of %d bytes", ErrV2Malformed, len(frame))
	}
	h := ParseV2Header(binary.BigEndian.Uint32(frame))
	switch h.OpCode {
	case V2AddEntry, V2ReadEntry:
		if len(frame) < V2ResponseHeaderBytes {
			return nil, fmt.Errorf("%w: response of %d bytes", ErrV2Malformed, len(frame))
		}
		rc := int32(binary.BigEndian.Uint32(frame[4:]))
		st, ok := StatusOfV2Code(rc)
		if !ok {
			return nil, fmt.Errorf("%w: return code %d", ErrV2Malformed, rc)
		}
		ledgerID := proto.Int64(int64(binary.BigEndian.Uint64(frame[8:])))
		entryID := proto.Int64(int64(binary.BigEndian.Uint64(frame[16:])))
		if h.OpCode == V2AddEntry {
			return &Response{Header: NewHeader(OperationType_ADD_ENTRY, 0), Status: st.Enum(),
				AddResponse: &AddResponse{Status: st.Enum(), LedgerId: ledgerID, EntryId: entryID}}, nil
		}
		rr := &ReadResponse{Status: st.Enum(), LedgerId: ledgerID, EntryId: entryID}
		if st == StatusCode_EOK {
			rr.Body = frame[V2ResponseHeaderBytes:]
		}
		return &Response{Header: NewHeader(OperationType_READ_ENTRY, 0), Status: st.Enum(), ReadResponse: rr}, nil
	case V2BatchReadEntry:
		const fixed = V2ResponseHeaderBytes + 8
		if len(frame) < fixed {
			return nil, fmt.Errorf("%w: batch response of %d bytes", ErrV2Malformed, len(frame))
		}
		rc := int32(binary.BigEndian.Uint32(frame[4:]))
		st, ok := StatusOfV2Code(rc)
		if !ok {
			return nil, fmt.Errorf("%w: return code %d", ErrV2Malformed, rc)
		}
		requestID := binary.BigEndian.Uint64(frame[24:])
		rr := &ReadResponse{Status: st.Enum(), LedgerId: proto.Int64(int64(binary.BigEndian.Uint64(frame[8:]))),
			EntryId: proto.Int64(int64(binary.BigEndian.Uint64(frame[16:])))}
		if st == StatusCode_EOK {
			rr.Body = frame[fixed:]
		}
		return &Response{Header: NewHeader(OperationType_READ_ENTRY, requestID), Status: st.Enum(), ReadResponse: rr}, nil
	case V2Auth:
		am := &AuthMessage{}
		if err := proto.Unmarshal(frame[v2HeaderBytes:], am); err != nil {
			return nil, fmt.Errorf("%w: auth message: %v", ErrV2Malformed, err)
		}
		return &Response{Header: NewHeader(OperationType_AUTH, 0), Status: StatusCode_EOK.Enum(), AuthResponse: am}, nil
	}
	return nil, fmt.Errorf("%w: response opcode %d", ErrV2Malformed, h.OpCode)
}
