package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledgerclient"
)

// wipeRefusalTimeout bounds how long a wiped bookie may take to refuse.
const wipeRefusalTimeout = 30 * time.Second

// fault injects one of scenario 10's faults; an error is the harness's.
func (st *wipeState) fault(ctx context.Context, mode string, other *ledgerclient.Client) error {
	switch mode {
	case "kill-restart":
		return st.killRestart(ctx)
	case "wipe":
		return st.wipe(ctx)
	case "fence-and-lac-survive-restart":
		return st.fencePersists(ctx, other)
	case "recovery-races-ensemble-change":
		return st.raceRecovery(ctx, other)
	}
	return fmt.Errorf("unknown fault %q", mode)
}

// ensembleVictim returns a random bookie of the current ledger's last
// ensemble.
func (st *wipeState) ensembleVictim(ctx context.Context) (*wipeLedger, *Bookie, error) {
	l := st.current()
	if l == nil {
		return nil, nil, errors.New("no ledger is being written")
	}
	md, err := st.writer.Stat(ctx, l.id)
	if err != nil {
		return nil, nil, err
	}
	ens := md.Segments[len(md.Segments)-1].Bookies
	b := st.r.Bookies.Bookie(string(ens[st.r.IntN(len(ens))]))
	if b == nil {
		return nil, nil, fmt.Errorf("ledger %d's ensemble %v names no bookie of the run", l.id, ens)
	}
	return l, b, nil
}

// restart starts b again and times it.
func (st *wipeState) restart(b *Bookie) error {
	t0 := time.Now()
	if err := st.r.Bookies.Start(b); err != nil {
		return err
	}
	st.restarts.add(time.Since(t0))
	return nil
}

// killRestart kills a bookie of the writer's ensemble during adds (the
// writer changes its ensemble) and restarts it with its data.
func (st *wipeState) killRestart(ctx context.Context) error {
	l, b, err := st.ensembleVictim(ctx)
	if err != nil {
		return err
	}
	st.r.Fault("kill -9 %s (ensemble of ledger %d) during adds, restart it", b.Name, l.id)
	st.r.Bookies.Kill(b)
	sleepCtx(ctx, time.Duration(1000+st.r.IntN(1000))*time.Millisecond)
	return st.restart(b)
}

// wipe restarts a bookie with empty directories: it must refuse to start
// because of its cookie and say so. Its data is then put back and it
// starts again.
func (st *wipeState) wipe(ctx context.Context) error {
	r := st.r
	b := r.Bookies.List[r.IntN(len(r.Bookies.List))]
	r.Fault("kill -9 %s, wipe its journal and ledger directories, start it", b.Name)
	r.Bookies.Kill(b)
	dirs := []string{b.JournalDir, b.LedgerDir}
	for _, d := range dirs {
		if err := os.Rename(d, d+".saved"); err != nil {
			return err
		}
	}
	p, err := r.Bookies.Launch(b)
	if err != nil {
		return err
	}
	served := false
	err = poll(wipeRefusalTimeout, b.Name+" refuses to start wiped", func() (bool, string, error) {
		if !p.Running() {
			return true, "", nil
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if pingBookie(pctx, b.Real) == nil {
			served = true
			return true, "", nil
		}
		return false, "running", nil
	})
	log := LogTail(p.LogPath, 15)
	switch {
	case served:
		r.Report.Violate("bk-cookie", "%s started with wiped directories and serves: its cookie did not stop it:\n%s", b.Name, log)
	case err != nil:
		r.Report.Violate("bk-cookie", "%s with wiped directories neither serves nor exits after %v:\n%s", b.Name,
			wipeRefusalTimeout, log)
	case !strings.Contains(strings.ToLower(log), "cookie"):
		r.Report.Violate("bk-cookie", "%s with wiped directories exited (%v) without naming its cookie:\n%s", b.Name,
			p.ExitErr(), log)
	default:
		st.mu.Lock()
		st.refusals++
		st.mu.Unlock()
		r.Logf("%s refused to start wiped: %s", b.Name, lastLine(log))
	}
	r.Bookies.Kill(b)
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.Rename(d+".saved", d); err != nil {
			return err
		}
	}
	return st.restart(b)
}

// fencePersists writes a ledger, stores an explicit LAC at one bookie of
// its ensemble and fences it there (raw requests), kills that bookie
// with SIGKILL and restarts it: a plain add must then get EFENCED, the
// explicit LAC must read back, and the entries must be there.
func (st *wipeState) fencePersists(ctx context.Context, other *ledgerclient.Client) error {
	r := st.r
	pw := []byte(wipePassword)
	w, err := other.Create(ctx, ledgerclient.CreateOptions{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2, Password: pw})
	if err != nil {
		return err
	}
	defer func() { _ = w.Close(ctx) }()
	id := w.ID()
	var sent [][]byte
	for i := range 3 {
		p := []byte(fmt.Sprintf("probe-L%d-e%d", id, i))
		if _, err := w.Append(ctx, p); err != nil {
			return err
		}
		sent = append(sent, p)
	}
	md := w.Metadata()
	seg := md.LastSegment() // E = Qw: each of its bookies holds every entry from its first on
	b := r.Bookies.Bookie(string(seg.Bookies[0]))
	if b == nil {
		return fmt.Errorf("ledger %d: no bookie %s", id, seg.Bookies[0])
	}
	mk, mac := bkproto.MasterKey(pw), bkproto.MacKey(pw)
	const lac = 2
	err = withBookie(ctx, b, func(c *bookierpc.Client) error {
		if err := c.WriteLAC(ctx, id, lac, mk[:], bkproto.EncodeLAC(id, lac, md.DigestType, mac[:])); err != nil {
			return fmt.Errorf("write explicit LAC: %w", err)
		}
		if _, err := c.FenceRead(ctx, id, bkproto.LastAddConfirmed, mk[:]); err != nil {
			return fmt.Errorf("fence: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	r.Fault("ledger %d fenced at %s with explicit LAC %d; kill -9 %s and restart it", id, b.Name, lac, b.Name)
	r.Bookies.Kill(b)
	if err := st.restart(b); err != nil {
		return err
	}
	return withBookie(ctx, b, func(c *bookierpc.Client) error {
		body := bkproto.EncodeEntry(id, 3, lac, 100, md.DigestType, mac[:], []byte("after the fence"))
		switch err := c.Add(ctx, id, 3, mk[:], body, false); {
		case errors.Is(err, bkproto.ErrFenced):
		case err == nil:
			r.Report.Violate("bk-fence-persist", "ledger %d: %s accepted a plain add after a restart: its fence was lost (BOOKKEEPER-500)",
				id, b.Name)
		default:
			r.Report.Violate("bk-fence-persist", "ledger %d: a plain add at restarted %s got %v, want EFENCED", id, b.Name, err)
		}
		resp, err := c.ReadLAC(ctx, id)
		got := int64(-2)
		if err == nil {
			got, err = bkproto.DecodeLAC(resp.GetLacBody(), md.DigestType, mac[:], id)
		}
		if err != nil || got < lac {
			r.Report.Violate("bk-lac-persist", "ledger %d: explicit LAC at restarted %s reads %d (%v), want %d (#1527)",
				id, b.Name, got, err, lac)
		}
		for i, p := range sent {
			if int64(i) < seg.FirstEntryID {
				continue
			}
			if err := readCopy(ctx, c, id, int64(i), md.DigestType, mac[:], p); err != nil {
				r.Report.Lost("ledger %d: entry %d gone from %s after its restart: %v", id, i, b.Name, err)
			}
		}
		return nil
	})
}

// withBookie runs fn with a fresh connection to b.
func withBookie(ctx context.Context, b *Bookie, fn func(*bookierpc.Client) error) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := bookierpc.Dial(dctx, b.ID)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

// raceRecovery kills a bookie of the writer's ensemble and, as the writer
// changes its ensemble, opens the writer's ledger with recovery from
// another client: both update the ledger's metadata by compare-and-set.
// The recovery must close the ledger at or past everything the writer had
// acknowledged (checked at the end) and the writer must move on.
func (st *wipeState) raceRecovery(ctx context.Context, other *ledgerclient.Client) error {
	r := st.r
	l, b, err := st.ensembleVictim(ctx)
	if err != nil {
		return err
	}
	r.Fault("kill -9 %s (ensemble of ledger %d) and recover the ledger from another client at once", b.Name, l.id)
	r.Bookies.Kill(b)
	sleepCtx(ctx, time.Duration(r.IntN(300))*time.Millisecond)
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	h, err := other.Open(rctx, l.id, []byte(wipePassword))
	cancel()
	st.mu.Lock()
	st.races++
	st.mu.Unlock()
	if err != nil {
		r.Report.Violate("bk-liveness", "ledger %d: recovery racing the writer's ensemble change: %v", l.id, err)
	} else {
		md := h.Metadata()
		r.Logf("ledger %d recovered at entry %d (%d segment(s)) while its writer had acked ..%d", l.id,
			md.LastEntryID, len(md.Segments), l.written().Acked)
	}
	moved := poll(15*time.Second, "the writer to leave the recovered ledger", func() (bool, string, error) {
		return st.current() != l, "", nil
	})
	l.mu.Lock()
	failure := l.failure
	l.mu.Unlock()
	if moved == nil && failure != nil {
		st.mu.Lock()
		st.raceFenced++
		st.mu.Unlock()
	}
	if moved != nil {
		r.Report.Violate("bk-fencing", "ledger %d: the writer still writes it 15s after another client recovered it", l.id)
	}
	return st.restart(b)
}
