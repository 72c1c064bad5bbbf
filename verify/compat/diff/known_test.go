package diff

import (
	"flag"
	"testing"

	"keeper/coordination/zkproto"
)

var bugsFlag = flag.Bool("diff.bugs", false, "run the reproductions of knownBugs and undecided (they fail until resolved)")

// knownDifferences holds, for every entry of knownBugs and undecided, the
// shortest script that shows the difference. With -diff.bugs each runs and
// fails at the differing step, printing both replies. Once keeper is fixed
// (or the difference accepted and normalized) the entry leaves knownBugs or
// undecided and its script stays here as a regression test.
var knownDifferences = map[string][]*step{
	variantUnreadableNodes: {
		auth(0, "alice:pa"),
		req(0, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/p", Data: []byte("x"),
			ACL: []zkproto.ACL{entry(zkproto.PermAll, "digest", aliceID)}}),
		addWatch(1, "/", zkproto.AddWatchPersistentRecursive),
		setData(0, "/p"),
	},
	variantAddWatchBadMode: {
		addWatch(0, "/a", 2),
	},
	variantBadWatcherType: {
		req(0, zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/a", Type: 0}),
		req(0, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: "/a", Type: 6}),
	},
	variantMultiReadWatch: {
		create(0, "/a", zkproto.FlagPersistent),
		req(1, zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpGetData, Record: &zkproto.GetDataRequest{Path: "/a", Watch: true}}}}),
		setData(0, "/a"),
	},
	variantMultiCreateFlags: {
		req(0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCreateTTL, Record: &zkproto.CreateTTLRequest{Path: "/m", ACL: zkproto.OpenACLUnsafe,
				Flags: zkproto.FlagEphemeral, TTLMs: 1000}}}}),
		req(0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: "/c", ACL: zkproto.OpenACLUnsafe,
				Flags: zkproto.FlagContainer}}}}),
	},
	variantWatcherType45: {
		req(0, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: "/a", Type: zkproto.WatcherPersistent}),
	},
	variantIPv6ACL: {
		req(0, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/v", ACL: []zkproto.ACL{entry(zkproto.PermAll, "ip", "::1")}}),
	},
	variantNullWatchList: {
		{kind: kindReconnect, slot: 0, name: "script", op: zkproto.OpSetWatches, watches: &zkproto.SetWatches2{}},
	},
	variantMixedWatchModes: {
		create(0, "/c", zkproto.FlagPersistent),
		addWatch(1, "/c", zkproto.AddWatchPersistent),
		getChildren(1, "/c", true),
		create(0, "/c/x", zkproto.FlagPersistent),
		del(0, "/c/x"),
	},
	variantCheckOthersWatches: {
		create(0, "/a", zkproto.FlagPersistent),
		getData(1, "/a", true),
		req(0, zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/a", Type: zkproto.WatcherData}),
	},
	variantMultiReadWriteOp: {
		req(0, zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCheck, Record: &zkproto.CheckVersionRequest{Path: "/", Version: -1}}}}),
	},
	variantAllChildrenEmptyPath: {
		req(0, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: ""}),
	},
	variantCheckRelativePath: {
		addWatch(1, "/", zkproto.AddWatchPersistentRecursive),
		req(0, zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: "a", Type: zkproto.WatcherChildren}),
	},
}

func auth(slot int, creds string) *step {
	return req(slot, zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte(creds)})
}

// TestKnownDifferences runs the reproductions. Those of differences still
// switched off are skipped unless -diff.bugs is given; the others are of
// differences since fixed, and must pass.
func TestKnownDifferences(t *testing.T) {
	off := map[string]string{}
	for k, v := range knownBugs {
		off[k] = v
	}
	for k, v := range undecided {
		off[k] = v
	}
	for name := range off {
		if _, ok := knownDifferences[name]; !ok {
			t.Errorf("%q is switched off but has no reproduction in knownDifferences", name)
		}
	}
	for _, name := range sortedKeys(knownDifferences) {
		t.Run(name, func(t *testing.T) {
			if why, ok := off[name]; ok {
				if !*bugsFlag {
					t.Skipf("%s (run with -diff.bugs)", why)
				}
				t.Logf("expect a difference: %s", why)
			}
			runScript(t, 2, serverOptions{extendedTypes: true}, knownDifferences[name])
		})
	}
}
