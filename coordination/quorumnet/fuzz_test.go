package quorumnet

import (
	"reflect"
	"testing"

	"keeper/coordination/zab"
)

// FuzzDecodeQuorumPacket feeds arbitrary bytes to the QuorumPacket decoder.
// Rejecting garbage is correct; panicking, over-allocating, or decoding to
// a message that does not survive a round trip is not.
func FuzzDecodeQuorumPacket(f *testing.F) {
	seeds := []string{
		"00000002 0000000100000001 00000003 74786e ffffffff",
		"0000000b 0000000100000000 00000014 0000000000000003 00010000 0000000000000000 ffffffff",
		"00000012 0000000100000003 00000004 ffffffff ffffffff",
		"00000001 ffffffffffffffff 00000015 0000000000000000 00000000 00000009 00000001 2f 00000000",
		"00000004 0000000100000002 00000002 abcd 00000001 00000002 6970 00000001 31",
		"0000000a 0000000200000000 00000003 613d62 ffffffff",
		"00000006 ffffffffffffffff 0000000c 0000000000001234 000007d0 ffffffff",
		"00000006 ffffffffffffffff 00000009 0000000000001234 01 ffffffff",
		"00000001 ffffffffffffffff 00000002 0102 00000001 00000002 6970 00000001 31",
		"00000011 0000000200000000 00000004 00014b50 ffffffff",
		"00000009 0000000100000004 00000008 0000000000000003 ffffffff",
		"00000013 0000000100000004 00000009 0000000000000002 74 ffffffff",
		"0000000b 0000000100000000 00000014 0000000000000003 00014b50 0000000100000004 ffffffff",
	}
	for _, s := range seeds {
		f.Add(hexBytes(f, s))
	}
	snap, err := EncodeQuorumPacket(zab.Message{Type: zab.MsgSnap, Zxid: 9, Data: testSnapshotBody(f)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(snap)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeQuorumPacket(b)
		if err != nil {
			return
		}
		enc, err := EncodeQuorumPacket(m)
		if err != nil {
			t.Fatalf("decoded %v cannot be encoded: %v", m, err)
		}
		again, err := DecodeQuorumPacket(enc)
		if err != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip turned %#v into %#v (err: %v)", m, again, err)
		}
	})
}

// FuzzDecodeNotification feeds arbitrary payloads to the election message
// decoder.
func FuzzDecodeNotification(f *testing.F) {
	for _, s := range []string{
		"00000001 0000000000000002 0000000300000004 0000000000000007",
		"00000002 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000001",
		"00000003 0000000000000002 0000000300000004 0000000000000007 0000000000000002 00000002 00000005 6162636465",
	} {
		f.Add(hexBytes(f, s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeNotification(b)
		if err != nil {
			return
		}
		enc, err := EncodeNotification(m)
		if err != nil {
			t.Fatalf("decoded %v cannot be encoded: %v", m, err)
		}
		again, err := DecodeNotification(enc)
		if err != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("round trip turned %#v into %#v (err: %v)", m, again, err)
		}
	})
}

// FuzzDecodeElectionHandshake feeds arbitrary bytes to the election
// connection handshake decoder.
func FuzzDecodeElectionHandshake(f *testing.F) {
	f.Add(hexBytes(f, "ffffffffffff0000 0000000000000002 00000003 613a31"))
	f.Add(hexBytes(f, "ffffffffffff0001 0000000000000003 00000007 613a317c623a32"))
	f.Add(hexBytes(f, "0000000000000005"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sid, addr, err := DecodeElectionHandshake(b)
		if err != nil || addr == "" {
			return
		}
		enc, err := EncodeElectionHandshake(sid, addr)
		if err != nil {
			t.Fatalf("decoded (%d, %q) cannot be encoded: %v", sid, addr, err)
		}
		sid2, addr2, err := DecodeElectionHandshake(enc)
		if err != nil || sid2 != sid || addr2 != addr {
			t.Fatalf("round trip turned (%d, %q) into (%d, %q) (err: %v)", sid, addr, sid2, addr2, err)
		}
	})
}
