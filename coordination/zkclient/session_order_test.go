package zkclient

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// TestWatchArmedAfterEarlierNotification checks that a watch set by a
// call does not fire on a notification the server sent before the call's
// reply: that change happened before the watch was set, and the reply
// already shows it. The server here answers a getChildren2 with watch by
// first sending a NodeChildrenChanged of the same node (another client's
// create, applied before the read), then the reply; the watch must fire
// only on the next notification, sent before the reply of a later sync.
// Before the fix the Session handed notifications out on its own
// goroutine, so one queued before the reply could reach a watch armed by
// the reply's callback; the scenario runs many times to meet that
// interleaving.
func TestWatchArmedAfterEarlierNotification(t *testing.T) {
	for range 200 {
		synctest.Test(t, watchArmedAfterEarlierNotification)
		if t.Failed() {
			return
		}
	}
}

func watchArmedAfterEarlierNotification(t *testing.T) {
	changed := zkproto.WatcherEvent{Type: zkproto.EventNodeChildrenChanged, State: zkproto.StateSyncConnected, Path: "/"}
	notify := func(nc net.Conn, zxid int64) error {
		_, err := nc.Write(zkproto.AppendReplyFrame(nil, zkproto.ReplyHeader{Xid: zkproto.XidNotification, Zxid: zxid}, &changed))
		return err
	}
	serve := func(nc net.Conn) {
		defer nc.Close()
		if _, err := zkproto.ReadFrame(nc, nil, 0); err != nil {
			return
		}
		if acceptSession(nc, 30000) != nil {
			return
		}
		for zxid := int64(10); ; zxid++ {
			frame, err := zkproto.ReadFrame(nc, nil, 0)
			if err != nil {
				return
			}
			h, _, err := zkproto.DecodeRequest(frame, 0)
			if err != nil {
				return
			}
			var resp jute.Record
			switch h.Op {
			case zkproto.OpGetChildren2:
				resp = &zkproto.GetChildren2Response{Children: []string{"a"}, Stat: zkproto.Stat{Pzxid: zxid}}
			case zkproto.OpSync:
				resp = &zkproto.SyncResponse{Path: "/"}
			case zkproto.OpCloseSession:
				nc.Write(zkproto.AppendReplyFrame(nil, zkproto.ReplyHeader{Xid: h.Xid, Zxid: zxid}, nil))
				return
			}
			if h.Op != zkproto.OpPing && notify(nc, zxid) != nil {
				return
			}
			if _, err := nc.Write(zkproto.AppendReplyFrame(nil, zkproto.ReplyHeader{Xid: h.Xid, Zxid: zxid}, resp)); err != nil {
				return
			}
		}
	}
	opts := SessionOptions{Options: Options{DialContext: func(context.Context, string, string) (net.Conn, error) {
		cli, srv := net.Pipe()
		go serve(srv)
		return cli, nil
	}}}
	ctx := context.Background()
	s, err := OpenSession(ctx, []string{"10.0.0.1:2181"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, ch, err := s.ChildrenW(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	select {
	case ev := <-ch:
		t.Fatalf("the watch fired on %+v, a notification sent before the reply that set it", ev)
	default:
	}
	c, err := s.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev != changed {
			t.Fatalf("the watch fired with %+v, want %+v", ev, changed)
		}
	case <-time.After(time.Second):
		t.Fatal("the watch did not fire on the notification sent after it was set")
	}
}
