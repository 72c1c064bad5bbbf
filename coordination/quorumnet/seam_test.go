package quorumnet

import (
	"reflect"
	"testing"
	"testing/synctest"

	"keeper/coordination/zab"
	"keeper/internal/memnet"
)

// TestListenDialSeam runs three transports over an in-memory network
// (Config.Listen and Config.Dial) inside a synctest bubble: every
// election notification arrives, and after Close every goroutine of
// theirs has ended (the bubble checks).
func TestListenDialSeam(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		trs := startTransports(t, 3, func(c *Config) { c.Listen, c.Dial = n.Listen, n.Dial })
		for _, tr := range trs {
			if tr.QuorumAddr() == "" || tr.ElectionAddr() == "" {
				t.Fatalf("server %d listens on %q and %q", tr.cfg.ID, tr.QuorumAddr(), tr.ElectionAddr())
			}
			for j := range trs {
				if to := zab.PeerID(j + 1); to != tr.cfg.ID {
					tr.Send([]zab.Message{{Type: zab.MsgNotification, From: tr.cfg.ID, To: to, State: zab.Looking, Round: 1,
						Vote: zab.Vote{Leader: tr.cfg.ID, Epoch: 1}}})
				}
			}
		}
		for _, tr := range trs {
			got := map[zab.PeerID]bool{}
			for range 2 {
				m := <-tr.Recv()
				want := zab.Message{Type: zab.MsgNotification, From: m.From, To: tr.cfg.ID, State: zab.Looking, Round: 1,
					Vote: zab.Vote{Leader: m.From, Epoch: 1}}
				if !reflect.DeepEqual(m, want) || m.From == tr.cfg.ID || got[m.From] {
					t.Fatalf("server %d received %v", tr.cfg.ID, m)
				}
				got[m.From] = true
			}
		}
		for _, tr := range trs {
			tr.Close()
		}
	})
}
