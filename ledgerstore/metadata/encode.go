package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// headerKey starts every serialized ledger metadata; the format version
// and a newline follow it (LedgerMetadataSerDe's header).
const headerKey = "BookieMetadataFormatVersion\t"

// maxVersionDigits bounds the version number in the header, as BookKeeper
// bounds it: the newline must come within ten bytes of the key.
const maxVersionDigits = 9

// MaxEncodedBytes bounds an encoded ledger metadata. A znode's data must
// fit the server's jute.maxbuffer (0xfffff bytes by default) together with
// the rest of the request; metadata anywhere near that size means a writer
// is looping on ensemble changes, so Encode refuses it well before.
const MaxEncodedBytes = 512 << 10

// v1InRecoveryEntryID marks an IN_RECOVERY ledger in format 1, where the
// closing line reads "-102\tCLOSED".
const v1InRecoveryEntryID = -102

// Encode returns md in format version 3: the header line
// "BookieMetadataFormatVersion\t3\n", then LedgerMetadataFormat in protobuf
// binary preceded by its length as a varint. It fails with ErrMalformed if
// md does not Validate or encodes to more than MaxEncodedBytes.
//
// The bytes are those BookKeeper 4.9+ writes for the same metadata, except
// that custom metadata is written in key order (Java writes it in hash-map
// order; readers do not care).
func Encode(md ledger.Metadata) ([]byte, error) {
	if err := Validate(md); err != nil {
		return nil, err
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(toProto(md))
	if err != nil {
		return nil, fmt.Errorf("metadata: encode: %w", err)
	}
	out := make([]byte, 0, len(headerKey)+2+binary.MaxVarintLen32+len(body))
	out = append(out, headerKey...)
	out = append(out, '0'+FormatVersion3, '\n')
	out = protowire.AppendVarint(out, uint64(len(body)))
	out = append(out, body...)
	if len(out) > MaxEncodedBytes {
		return nil, fmt.Errorf("%w: %d bytes encoded, limit %d", ErrMalformed, len(out), MaxEncodedBytes)
	}
	return out, nil
}

// toProto builds the message as LedgerMetadataSerDe does for version 3:
// lastEntryId, length, ackQuorumSize and cToken are always present; the
// digest type and password whenever the metadata has them (the password as
// an empty field if empty); ctime only if StoreCreationTime.
func toProto(md ledger.Metadata) *bkproto.LedgerMetadataFormat {
	f := &bkproto.LedgerMetadataFormat{
		QuorumSize:    proto.Int32(int32(md.WriteQuorum)),
		EnsembleSize:  proto.Int32(int32(md.EnsembleSize)),
		Length:        proto.Int64(md.Length),
		LastEntryId:   proto.Int64(md.LastEntryID),
		State:         bkproto.LedgerMetadataFormat_State(md.State).Enum(),
		AckQuorumSize: proto.Int32(int32(md.AckQuorum)),
		CToken:        proto.Int64(md.CToken),
	}
	for _, s := range md.Segments {
		members := make([]string, len(s.Bookies))
		for i, b := range s.Bookies {
			members[i] = string(b)
		}
		f.Segment = append(f.Segment, &bkproto.LedgerMetadataFormat_Segment{
			EnsembleMember: members, FirstEntryId: proto.Int64(s.FirstEntryID)})
	}
	if md.DigestType != 0 {
		f.DigestType = md.DigestType.Enum()
		f.Password = append([]byte{}, md.Password...)
	}
	if md.StoreCreationTime {
		f.Ctime = proto.Int64(md.CTimeMillis)
	}
	for _, k := range slices.Sorted(maps.Keys(md.Custom)) {
		f.CustomMetadata = append(f.CustomMetadata, &bkproto.LedgerMetadataFormatCMetadataMapEntry{
			Key: proto.String(k), Value: append([]byte{}, md.Custom[k]...)})
	}
	return f
}

// Decode parses ledger metadata in format version 1, 2 or 3 and checks it
// as Validate does. Errors wrap ErrMalformed. Unlike BookKeeper, Decode
// refuses bytes after a version 3 message, a state or digest type number
// it does not know, and a known field encoded with the wrong wire type,
// rather than reading them as the field's default.
func Decode(data []byte) (ledger.Metadata, error) {
	version, body, err := splitHeader(data)
	if err != nil {
		return ledger.Metadata{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	var md ledger.Metadata
	switch version {
	case FormatVersion3:
		md, err = decodeV3(body)
	case FormatVersion2:
		md, err = decodeV2(body)
	case FormatVersion1:
		md, err = decodeV1(body)
	default:
		err = fmt.Errorf("format version %d, want 1 to 3", version)
	}
	if err == nil {
		md.FormatVersion = version
		err = validate(md)
	}
	if err != nil {
		return ledger.Metadata{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return md, nil
}

// splitHeader parses the header line and returns the version and the rest.
func splitHeader(data []byte) (int, []byte, error) {
	if !bytes.HasPrefix(data, []byte(headerKey)) {
		return 0, nil, errors.New("no BookieMetadataFormatVersion header")
	}
	rest := data[len(headerKey):]
	nl := bytes.IndexByte(rest[:min(len(rest), maxVersionDigits+1)], '\n')
	if nl < 0 {
		return 0, nil, errors.New("header: no newline after the version")
	}
	version, err := strconv.ParseInt(string(rest[:nl]), 10, 32)
	if err != nil {
		return 0, nil, fmt.Errorf("header: version %q", rest[:nl])
	}
	return int(version), rest[nl+1:], nil
}

func decodeV3(body []byte) (ledger.Metadata, error) {
	size, n := protowire.ConsumeVarint(body)
	if n < 0 || size > math.MaxInt32 {
		return ledger.Metadata{}, errors.New("bad message length")
	}
	body = body[n:]
	if uint64(len(body)) != size {
		return ledger.Metadata{}, fmt.Errorf("message length %d, but %d bytes follow", size, len(body))
	}
	f := &bkproto.LedgerMetadataFormat{}
	if err := proto.Unmarshal(body, f); err != nil {
		return ledger.Metadata{}, err
	}
	return fromProto(f)
}

func decodeV2(body []byte) (ledger.Metadata, error) {
	f := &bkproto.LedgerMetadataFormat{}
	if err := prototext.Unmarshal(body, f); err != nil {
		return ledger.Metadata{}, err
	}
	return fromProto(f)
}

// fromProto reads the message as LedgerMetadataSerDe.decodeFormat does: Qa
// defaults to Qw; lastEntryId and length count only for a closed ledger;
// the digest type (default CRC32) counts only if a password is present.
func fromProto(f *bkproto.LedgerMetadataFormat) (ledger.Metadata, error) {
	if err := checkUnknown(f.ProtoReflect().GetUnknown()); err != nil {
		return ledger.Metadata{}, err
	}
	md := ledger.Metadata{
		EnsembleSize: int(f.GetEnsembleSize()),
		WriteQuorum:  int(f.GetQuorumSize()),
		AckQuorum:    int(f.GetQuorumSize()),
		State:        ledger.State(f.GetState()),
		LastEntryID:  ledger.NoEntry,
		CToken:       f.GetCToken(),
	}
	if f.AckQuorumSize != nil {
		md.AckQuorum = int(f.GetAckQuorumSize())
	}
	if md.State == ledger.StateClosed {
		md.LastEntryID, md.Length = f.GetLastEntryId(), f.GetLength()
	}
	if f.Ctime != nil {
		md.CTimeMillis, md.StoreCreationTime = f.GetCtime(), true
	}
	if f.Password != nil {
		md.DigestType = f.GetDigestType()
		md.Password = nonEmpty(f.Password)
	}
	for _, s := range f.Segment {
		seg := ledger.Segment{FirstEntryID: s.GetFirstEntryId(), Bookies: make([]ledger.BookieID, len(s.EnsembleMember))}
		for i, m := range s.EnsembleMember {
			seg.Bookies[i] = ledger.BookieID(m)
		}
		md.Segments = append(md.Segments, seg)
	}
	for _, e := range f.CustomMetadata {
		if md.Custom == nil {
			md.Custom = make(map[string][]byte, len(f.CustomMetadata))
		}
		md.Custom[e.GetKey()] = nonEmpty(e.Value)
	}
	return md, nil
}

// checkUnknown rejects unknown fields that carry a known field's number:
// a known field sent with the wrong wire type lands there, and the field
// would silently read as its default. Fields numbered above the schema's
// are a newer writer's additions and are dropped, as BookKeeper drops them.
// (Enum values out of range are not unknown fields in Go's protobuf; the
// validation after decoding rejects them.)
func checkUnknown(b []byte) error {
	for len(b) > 0 {
		num, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if num <= 12 {
			return fmt.Errorf("field %d holds a value this version cannot represent", num)
		}
		b = b[n:]
	}
	return nil
}

// decodeV1 parses the format 1 text layout: Qw, E and length on a line
// each, then one line per ensemble ("firstEntryId\tbookie\tbookie..."),
// then, for a closed ledger, "lastEntryId\tCLOSED" ("-102\tCLOSED" for one
// in recovery). Format 1 stores no ack quorum (Qa = Qw), digest type or
// password.
func decodeV1(body []byte) (ledger.Metadata, error) {
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) < 3 {
		return ledger.Metadata{}, errors.New("format 1: fewer than three lines")
	}
	var nums [3]int64
	for i, bits := range []int{32, 32, 64} { // Qw and E are Java ints, the length a long
		v, err := strconv.ParseInt(strings.TrimSuffix(lines[i], "\r"), 10, bits)
		if err != nil {
			return ledger.Metadata{}, fmt.Errorf("format 1: line %d: %w", i+1, err)
		}
		nums[i] = v
	}
	md := ledger.Metadata{WriteQuorum: int(nums[0]), AckQuorum: int(nums[0]),
		EnsembleSize: int(nums[1]), State: ledger.StateOpen, LastEntryID: ledger.NoEntry}
	for i, line := range lines[3:] {
		parts := strings.Split(strings.TrimSuffix(line, "\r"), "\t")
		if len(parts) < 2 {
			return ledger.Metadata{}, fmt.Errorf("format 1: line %d has no tab", i+4)
		}
		first, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return ledger.Metadata{}, fmt.Errorf("format 1: line %d: %w", i+4, err)
		}
		if parts[1] == "CLOSED" {
			if first == v1InRecoveryEntryID {
				md.State = ledger.StateInRecovery
			} else {
				md.State, md.LastEntryID, md.Length = ledger.StateClosed, first, nums[2]
			}
			break
		}
		seg := ledger.Segment{FirstEntryID: first}
		for _, b := range parts[1:] {
			seg.Bookies = append(seg.Bookies, ledger.BookieID(b))
		}
		md.Segments = append(md.Segments, seg)
	}
	return md, nil
}

// nonEmpty returns b, or nil if it is empty, so that decoded metadata
// compares equal whatever the wire said about an empty field.
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
