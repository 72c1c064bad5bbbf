package ledgerclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// sanityDeleteTimeout bounds the deletion of the sanity test's ledger.
const sanityDeleteTimeout = 30 * time.Second

// SanityTest is BookKeeper's bookie sanity test: on a new ledger held to
// bookie alone (ensemble and quorums 1, digest MAC, an empty password) it
// appends the entries "entry-0", "entry-1", ... (entries of them), closes
// the ledger, opens it again, checks that its last entry is entries-1 and
// reads every entry back. BookKeeper leaves the ledger behind; keeper
// deletes it afterwards, whatever the outcome, so that a probe run every
// few seconds leaves nothing.
func (c *Client) SanityTest(ctx context.Context, bookie ledger.BookieID, entries int) (err error) {
	if entries < 1 {
		return fmt.Errorf("ledgerclient: sanity test: %d entries", entries)
	}
	w, err := c.Create(ctx, CreateOptions{Ensemble: 1, WriteQuorum: 1, AckQuorum: 1, Digest: bkproto.DigestHMAC,
		Password: []byte{}, Bookies: []ledger.BookieID{bookie}})
	if err != nil {
		return fmt.Errorf("ledgerclient: sanity test: %w", err)
	}
	id := w.ID()
	defer func() {
		// A context of its own: the test's may have ended.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sanityDeleteTimeout)
		defer cancel()
		if derr := c.Delete(dctx, id); derr != nil {
			err = errors.Join(err, fmt.Errorf("ledgerclient: sanity test: delete ledger %d: %w", id, derr))
		}
	}()
	want := make([]string, entries)
	results := make(chan error, entries)
	for i := range entries {
		want[i] = fmt.Sprintf("entry-%d", i)
		w.AppendAsync([]byte(want[i]), func(_ int64, err error) { results <- err })
	}
	for range entries {
		if err := <-results; err != nil {
			_ = w.Close(ctx)
			return fmt.Errorf("ledgerclient: sanity test: add to ledger %d: %w", id, err)
		}
	}
	if err := w.Close(ctx); err != nil {
		return fmt.Errorf("ledgerclient: sanity test: close ledger %d: %w", id, err)
	}
	h, err := c.Open(ctx, id, []byte{})
	if err != nil {
		return fmt.Errorf("ledgerclient: sanity test: %w", err)
	}
	if lac := h.LAC(); lac != int64(entries-1) {
		return fmt.Errorf("ledgerclient: sanity test: invalid last entry found on ledger %d: expecting %d, found %d",
			id, entries-1, lac)
	}
	got, err := h.Read(ctx, 0, int64(entries-1))
	if err != nil {
		return fmt.Errorf("ledgerclient: sanity test: read ledger %d: %w", id, err)
	}
	for i, e := range got {
		if string(e.Payload) != want[i] {
			return fmt.Errorf("ledgerclient: sanity test: ledger %d entry %d is %q, want %q", id, i, e.Payload, want[i])
		}
	}
	if len(got) != entries {
		return fmt.Errorf("ledgerclient: sanity test: read %d entries of ledger %d, want %d", len(got), id, entries)
	}
	return nil
}
