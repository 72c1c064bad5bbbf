package zkproto

import (
	"encoding/hex"
	"strings"
	"testing"

	"keeper/coordination/jute"
)

// hx builds bytes from space-separated tokens: two hex digits each, or a
// token starting with ' taken as literal ASCII (e.g. '/foo). Only for tests.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for _, tok := range strings.Fields(s) {
		if strings.HasPrefix(tok, "'") {
			out = append(out, tok[1:]...)
			continue
		}
		b, err := hex.DecodeString(tok)
		if err != nil {
			t.Fatalf("bad hex token %q: %v", tok, err)
		}
		out = append(out, b...)
	}
	return out
}

// sampleStat has a distinct value in every field so that field order
// mistakes show up.
var sampleStat = Stat{
	Czxid: 0x100000001, Mzxid: 0x100000002, Ctime: 1700000000000, Mtime: 1700000000001,
	Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x0100000c4c560000,
	DataLength: 6, NumChildren: 7, Pzxid: 0x100000003,
}

// sampleRequests has one populated request per opcode a client may send, in
// the record NewRequest returns for it (nil for empty bodies).
func sampleRequests() map[Op]jute.Record {
	acl := []ACL{{Perms: PermAll, ID: ID{Scheme: "world", ID: "anyone"}}}
	return map[Op]jute.Record{
		OpCreate:          &CreateRequest{Path: "/a", Data: []byte("x"), ACL: acl, Flags: FlagEphemeral},
		OpDelete:          &DeleteRequest{Path: "/a", Version: -1},
		OpExists:          &ExistsRequest{Path: "/a", Watch: true},
		OpGetData:         &GetDataRequest{Path: "/a", Watch: true},
		OpSetData:         &SetDataRequest{Path: "/a", Data: nil, Version: 2},
		OpGetACL:          &GetACLRequest{Path: "/a"},
		OpSetACL:          &SetACLRequest{Path: "/a", ACL: []ACL{}, Version: 1},
		OpGetChildren:     &GetChildrenRequest{Path: "/", Watch: false},
		OpSync:            &SyncRequest{Path: "/a"},
		OpPing:            nil,
		OpGetChildren2:    &GetChildren2Request{Path: "/a", Watch: true},
		OpCheck:           &CheckVersionRequest{Path: "/a", Version: 9},
		OpCreate2:         &CreateRequest{Path: "/b", Data: []byte{}, ACL: acl, Flags: FlagPersistentSequential},
		OpReconfig:        &ReconfigRequest{JoiningServers: "server.5=h:2888:3888;2181", LeavingServers: "3", CurConfigID: -1},
		OpCheckWatches:    &CheckWatchesRequest{Path: "/a", Type: WatcherData},
		OpRemoveWatches:   &RemoveWatchesRequest{Path: "/a", Type: WatcherAny},
		OpCreateContainer: &CreateRequest{Path: "/c", ACL: acl, Flags: FlagContainer},
		OpDeleteContainer: &DeleteContainerRequest{Path: []byte("/c")},
		OpCreateTTL:       &CreateTTLRequest{Path: "/t", Data: []byte("d"), ACL: acl, Flags: FlagPersistentWithTTL, TTLMs: 60000},
		OpMulti: &MultiRequest{Ops: []MultiOp{
			{Op: OpCreate, Record: &CreateRequest{Path: "/m", ACL: acl}},
			{Op: OpCheck, Record: &CheckVersionRequest{Path: "/m", Version: 0}},
			{Op: OpSetData, Record: &SetDataRequest{Path: "/m", Data: []byte("v"), Version: -1}},
			{Op: OpDelete, Record: &DeleteRequest{Path: "/m", Version: -1}},
		}},
		OpMultiRead: &MultiRequest{Ops: []MultiOp{
			{Op: OpGetData, Record: &GetDataRequest{Path: "/a"}},
			{Op: OpGetChildren, Record: &GetChildrenRequest{Path: "/"}},
		}},
		OpAuth:                 &AuthPacket{Scheme: "digest", Auth: []byte("user:pass")},
		OpSetWatches:           &SetWatches{RelativeZxid: 5, DataWatches: []string{"/a"}, ExistWatches: []string{}, ChildWatches: nil},
		OpSASL:                 &GetSASLRequest{Token: []byte{1, 2, 3}},
		OpGetEphemerals:        &GetEphemeralsRequest{PrefixPath: "/e"},
		OpGetAllChildrenNumber: &GetAllChildrenNumberRequest{Path: "/"},
		OpSetWatches2: &SetWatches2{RelativeZxid: 6, DataWatches: []string{"/a"}, ExistWatches: []string{"/b"},
			ChildWatches: []string{"/c"}, PersistentWatches: []string{"/p"}, PersistentRecursiveWatches: []string{"/r", "/s"}},
		OpAddWatch:     &AddWatchRequest{Path: "/w", Mode: AddWatchPersistentRecursive},
		OpWhoAmI:       nil,
		OpCloseSession: nil,
	}
}

// sampleResponses has one populated success body per opcode whose reply
// has a body, in the record NewResponse returns for it.
func sampleResponses() map[Op]jute.Record {
	return map[Op]jute.Record{
		OpCreate:       &CreateResponse{Path: "/q-0000000001"},
		OpExists:       &ExistsResponse{Stat: sampleStat},
		OpGetData:      &GetDataResponse{Data: nil, Stat: sampleStat},
		OpSetData:      &SetDataResponse{Stat: sampleStat},
		OpGetACL:       &GetACLResponse{ACL: OpenACLUnsafe, Stat: sampleStat},
		OpSetACL:       &SetACLResponse{Stat: sampleStat},
		OpGetChildren:  &GetChildrenResponse{Children: []string{"a", "b"}},
		OpSync:         &SyncResponse{Path: "/a"},
		OpGetChildren2: &GetChildren2Response{Children: []string{}, Stat: sampleStat},
		OpMulti: &MultiResponse{Results: []MultiResult{
			{Op: OpCreate, Record: &CreateResponse{Path: "/m"}},
			{Op: OpCreate2, Record: &Create2Response{Path: "/n", Stat: sampleStat}},
			{Op: OpCheck},
			{Op: OpSetData, Record: &SetDataResponse{Stat: sampleStat}},
			{Op: OpDelete},
		}},
		OpCreate2:         &Create2Response{Path: "/b", Stat: sampleStat},
		OpReconfig:        &GetDataResponse{Data: []byte("server.1=h:2888:3888;2181\nversion=100000000"), Stat: sampleStat},
		OpCreateContainer: &Create2Response{Path: "/c", Stat: sampleStat},
		OpCreateTTL:       &Create2Response{Path: "/t", Stat: sampleStat},
		OpMultiRead: &MultiResponse{Results: []MultiResult{
			{Op: OpGetData, Record: &GetDataResponse{Data: []byte("v"), Stat: sampleStat}},
			ErrorResult(CodeNoNode),
			{Op: OpGetChildren, Record: &GetChildrenResponse{Children: []string{"x"}}},
		}},
		OpSASL:                 &SetSASLResponse{Token: []byte{}},
		OpGetEphemerals:        &GetEphemeralsResponse{Ephemerals: []string{"/e/1"}},
		OpGetAllChildrenNumber: &GetAllChildrenNumberResponse{TotalNumber: 6},
		OpAddWatch:             &ErrorResponse{Err: CodeOK},
		OpWhoAmI:               &WhoAmIResponse{ClientInfo: []ClientInfo{{"ip", "127.0.0.1"}, {"digest", "user"}}},
	}
}
