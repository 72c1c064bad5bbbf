package bookie

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

func TestPoolClass(t *testing.T) {
	tests := []struct{ n, class int }{
		{0, 0}, {1, 0}, {512, 0}, {513, 1}, {1024, 1}, {1025, 2}, {1100, 2},
		{32 << 10, 6}, {32<<10 + 1, 7}, {maxPooledFrameBytes, framePoolClasses - 1},
	}
	for _, tt := range tests {
		if got := poolClass(tt.n); got != tt.class {
			t.Errorf("poolClass(%d) = %d, want %d", tt.n, got, tt.class)
		}
		fb := getFrameBuf(tt.n)
		if len(fb.b) < tt.n || fb.class != tt.class {
			t.Errorf("getFrameBuf(%d): %d bytes, class %d", tt.n, len(fb.b), fb.class)
		}
		fb.put()
	}
}

// TestAliasedAddsKeepTheirBytes checks that adds whose bodies alias
// pooled request frames (bkproto.DecodeRequestAliased) are stored and
// journaled intact while other connections reuse those frames: many
// connections pipeline adds of sizes that share pools, some of which the
// bookie refuses early (a wrong master key), and every entry must read
// back intact, and again after a crash, from what the journal replays.
// Under -race a frame returned to its pool while the journal still
// reads it is reported as a race with the reader that reuses it.
func TestAliasedAddsKeepTheirBytes(t *testing.T) {
	e := newEnv(t, false)
	b := e.start()
	const conns, perConn = 4, 150
	size := func(entryID int64) int { return 100 + int(entryID%7)*400 } // 100..2500 bytes: four pools
	badKey := bytes.Repeat([]byte{7}, bkproto.MasterKeyBytes)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		c := dial(t, b)
		wg.Go(func() {
			ledgerID := int64(i + 1)
			var calls []<-chan bookierpc.Result
			for e := range int64(perConn) {
				calls = append(calls, c.Go(bookierpc.AddRequest(ledgerID, e, testKey, body(ledgerID, e, size(e)), false)))
				if e%10 == 0 { // refused before the journal: its frame goes back at once
					calls = append(calls, c.Go(bookierpc.AddRequest(ledgerID, e, badKey, body(ledgerID, e, size(e)), false)))
				}
			}
			for j, ch := range calls {
				res := <-ch
				err := bookierpc.StatusErr(res.Resp, res.Err)
				if res.Resp.GetAddResponse() == nil && err == nil {
					err = fmt.Errorf("call %d: no add response", j)
				}
				if err != nil && bkproto.StatusOf(err) != bkproto.StatusCode_EUA {
					errs <- fmt.Errorf("ledger %d call %d: %w", ledgerID, j, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(c *bookierpc.Client, when string) {
		for l := int64(1); l <= conns; l++ {
			for e := range int64(perConn) {
				rr, err := c.Read(ctx(t), l, e)
				if err != nil {
					t.Fatalf("%s: read %d/%d: %v", when, l, e, err)
				}
				if want := body(l, e, size(e)); !bytes.Equal(rr.GetBody(), want) {
					t.Fatalf("%s: entry %d/%d differs from what was added", when, l, e)
				}
			}
		}
	}
	check(dial(t, b), "live")
	crashed := e.crash()
	_ = b.Close()
	check(dial(t, crashed.start()), "after a crash")
}
