package zkproto

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"keeper/coordination/jute"
)

// A reconfig's newMembers is null for an incremental change and a string
// (possibly empty) for a replacement; ZooKeeper's leader tells them apart,
// so the codec keeps the difference both ways.
func TestReconfigRequestNewMembers(t *testing.T) {
	empty, members := "", "server.1=h:1:2;3"
	tests := []struct {
		name string
		req  ReconfigRequest
		wire string
	}{
		{"incremental", ReconfigRequest{JoiningServers: "a", LeavingServers: "2", CurConfigID: -1},
			"00000001 61 00000001 32 ffffffff ffffffffffffffff"},
		{"replacement by nothing", ReconfigRequest{NewMembers: &empty, CurConfigID: 5},
			"00000000 00000000 00000000 0000000000000005"},
		{"replacement", ReconfigRequest{NewMembers: &members, CurConfigID: -1},
			"00000000 00000000 00000010 " + hex.EncodeToString([]byte(members)) + " ffffffffffffffff"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wire, err := hex.DecodeString(strings.ReplaceAll(tc.wire, " ", ""))
			if err != nil {
				t.Fatal(err)
			}
			e := jute.Encoder{}
			tc.req.Encode(&e)
			if !bytes.Equal(e.B, wire) {
				t.Fatalf("encode: % x, want % x", e.B, wire)
			}
			var got ReconfigRequest
			d := jute.NewDecoder(wire, 1<<20)
			got.Decode(d)
			if err := d.Finish(); err != nil {
				t.Fatal(err)
			}
			if (got.NewMembers == nil) != (tc.req.NewMembers == nil) ||
				(got.NewMembers != nil && *got.NewMembers != *tc.req.NewMembers) ||
				got.JoiningServers != tc.req.JoiningServers || got.LeavingServers != tc.req.LeavingServers ||
				got.CurConfigID != tc.req.CurConfigID {
				t.Fatalf("decode: %+v, want %+v", got, tc.req)
			}
		})
	}
}
