package bkproto

import "encoding/binary"

// DecodeV2RequestAliased is DecodeV2Request for a reader that can keep
// frame unchanged for as long as the request's byte fields are in use, as
// DecodeRequestAliased is for v3: a v2 ADDENTRY (the packet Pulsar's
// bookie client sends for every add) is decoded without copying, its
// masterKey and body aliasing frame, and aliased is true. Any other
// packet is decoded by DecodeV2Request, copying, with aliased false.
// Either way the request, v2 and the error are those DecodeV2Request
// gives for the same frame (FuzzDecodeV2RequestAliased checks it).
func DecodeV2RequestAliased(frame []byte) (req *Request, v2 V2Request, aliased bool, err error) {
	return DecodeV2RequestAliasedInto(new(AddBuffer), frame)
}

// DecodeV2RequestAliasedInto is DecodeV2RequestAliased decoding an add
// into buf (see AddBuffer) instead of a fresh allocation.
func DecodeV2RequestAliasedInto(buf *AddBuffer, frame []byte) (req *Request, v2 V2Request, aliased bool, err error) {
	if len(frame) < v2HeaderBytes+MasterKeyBytes+16 {
		req, v2, err = DecodeV2Request(frame)
		return req, v2, false, err
	}
	h := ParseV2Header(binary.BigEndian.Uint32(frame))
	if h.OpCode != V2AddEntry {
		req, v2, err = DecodeV2Request(frame)
		return req, v2, false, err
	}
	rest := frame[v2HeaderBytes:]
	body := rest[MasterKeyBytes:]
	a := &buf.a
	*a = addAlloc{ledgerID: int64(binary.BigEndian.Uint64(body)), entryID: int64(binary.BigEndian.Uint64(body[8:]))}
	// The v3 request it stands for, as DecodeV2Request builds it: version
	// 3, transaction 0, HIGH_PRIORITY as priority 100, RECOVERY_ADD as the
	// flag.
	a.hv = headerVals{version: ProtocolVersionV3, op: OperationType_ADD_ENTRY}
	if h.Flags&V2FlagHighPriority != 0 {
		a.hv.priority, a.hv.hasPriority = v2HighPriority, true
	}
	a.hv.fill(&a.hdr)
	a.add.LedgerId, a.add.EntryId = &a.ledgerID, &a.entryID
	a.add.MasterKey, a.add.Body = rest[:MasterKeyBytes:MasterKeyBytes], body[:len(body):len(body)]
	if h.Flags&V2FlagRecoveryAdd != 0 {
		a.flag = AddRequest_RECOVERY_ADD
		a.add.Flag = &a.flag
	}
	a.req.Header, a.req.AddRequest = &a.hdr, &a.add
	v2 = V2Request{Header: h, LedgerID: a.ledgerID, EntryID: a.entryID}
	if h.Version < V2LowestVersion || h.Version > V2CurrentVersion {
		return &a.req, v2, true, Errorf(StatusCode_EBADVERSION, "v2 protocol version %d", h.Version)
	}
	// Of ValidateRequest's checks only the add's own apply: the header is
	// version 3 and only the AddRequest slot is set.
	return &a.req, v2, true, validateAdd(&a.add)
}
