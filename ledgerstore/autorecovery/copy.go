package autorecovery

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// conns holds one bookie protocol connection per bookie, dialled on first
// use from the bookie's registration and dropped after a transport error.
type conns struct {
	store *metadata.Store
	opts  bookierpc.Options // the ledger client's (TLS)

	mu     sync.Mutex // guards below
	closed bool
	m      map[ledger.BookieID]*bookierpc.Client
}

func newConns(store *metadata.Store, client *ledgerclient.Client) *conns {
	c := &conns{store: store, m: map[ledger.BookieID]*bookierpc.Client{}}
	if client != nil {
		c.opts = client.BookieDialOptions()
	}
	return c
}

func (c *conns) get(ctx context.Context, b ledger.BookieID) (*bookierpc.Client, error) {
	c.mu.Lock()
	cl, ok := c.m[b]
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("autorecovery: closed")
	}
	if ok {
		return cl, nil
	}
	addr, err := c.store.BookieAddress(ctx, b)
	if err != nil {
		return nil, err
	}
	cl, err = bookierpc.DialWith(ctx, addr, c.opts)
	if err != nil {
		return nil, fmt.Errorf("autorecovery: dial bookie %s at %s: %w", b, addr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = cl.Close()
		return nil, errors.New("autorecovery: closed")
	}
	if old, ok := c.m[b]; ok { // another caller dialled meanwhile
		_ = cl.Close()
		return old, nil
	}
	c.m[b] = cl
	return cl, nil
}

// failed drops b's connection after err, unless err is the bookie's own
// answer (a status), which says the connection is fine.
func (c *conns) failed(b ledger.BookieID, cl *bookierpc.Client, err error) {
	var status *bkproto.Error
	if errors.As(err, &status) {
		return
	}
	c.mu.Lock()
	if c.m[b] == cl {
		delete(c.m, b)
	}
	c.mu.Unlock()
	_ = cl.Close()
}

func (c *conns) close() {
	c.mu.Lock()
	c.closed = true
	m := c.m
	c.m = nil
	c.mu.Unlock()
	for _, cl := range m {
		_ = cl.Close()
	}
}

// copied counts what a fragment's copy moved.
type copied struct {
	entries int
	bytes   int64
}

// copyFragment copies every entry of f from a surviving replica to target,
// at most batch entries in flight. Each copy is checked against the
// entry's digest before it is written, and written with RECOVERY_ADD and
// the ledger's master key, so a fenced or closed ledger takes it.
func (c *conns) copyFragment(ctx context.Context, id int64, md ledger.Metadata, f fragment, target ledger.BookieID,
	live func(ledger.BookieID) bool, batch int) (copied, error) {
	p := md.Placement()
	seg := md.Segments[f.segment]
	masterKey := bkproto.MasterKey(md.Password)
	macKey := bkproto.MacKey(md.Password)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu   sync.Mutex
		done copied
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, batch)
	for _, e := range f.entries(p) {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			n, err := c.copyEntry(ctx, id, e, sources(p, seg, e, f.pos), target, live, md.Digest(), macKey[:], masterKey[:])
			if err != nil {
				cancel(err)
				return
			}
			mu.Lock()
			done.entries++
			done.bytes += int64(n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return done, err
	}
	return done, nil
}

// copyEntry reads entry e from the first source that has a valid copy and
// adds it to target; it returns the entry's stored size.
func (c *conns) copyEntry(ctx context.Context, id, e int64, from []ledger.BookieID, target ledger.BookieID,
	live func(ledger.BookieID) bool, digest bkproto.DigestType, macKey, masterKey []byte) (int, error) {
	var errs []error
	for _, b := range from {
		if !live(b) {
			continue
		}
		body, err := c.readEntry(ctx, b, id, e, digest, macKey)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cl, err := c.get(ctx, target)
		if err != nil {
			return 0, err
		}
		if err := cl.Add(ctx, id, e, masterKey, body, true); err != nil {
			c.failed(target, cl, err)
			return 0, fmt.Errorf("autorecovery: ledger %d entry %d: add to %s: %w", id, e, target, err)
		}
		return len(body), nil
	}
	return 0, fmt.Errorf("autorecovery: ledger %d entry %d: no surviving replica among %v: %w",
		id, e, from, errors.Join(errs...))
}

func (c *conns) readEntry(ctx context.Context, b ledger.BookieID, id, e int64, digest bkproto.DigestType,
	macKey []byte) ([]byte, error) {
	cl, err := c.get(ctx, b)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Read(ctx, id, e)
	if err != nil {
		c.failed(b, cl, err)
		return nil, fmt.Errorf("read from %s: %w", b, err)
	}
	body := resp.GetBody()
	if _, err := bkproto.DecodeEntry(body, digest, macKey, id, e); err != nil {
		return nil, fmt.Errorf("read from %s: %w", b, err)
	}
	return body, nil
}
