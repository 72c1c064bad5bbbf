package ledgerproc

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
)

// Shape of the writer-process tests: the test feeds writerEntries lines
// to `keeper ledger write` and acts once the writer has reported
// writerActAfter entries acknowledged, far from the end of the stream.
const (
	writerEntries  = 50_000
	writerActAfter = 2_000
)

// TestWriterKilledMidStream kills a `keeper ledger write` process with
// SIGKILL mid-stream. A second client then opens the ledger with
// recovery: the ledger must be closed at or after the last entry the
// writer reported acknowledged, and every entry up to the end must read
// back as written.
func TestWriterKilledMidStream(t *testing.T) {
	cl := startCluster(t, 3)
	ctx := testContext(t, 2*time.Minute)
	wp := startWriter(t, cl)
	id := wp.ledgerID(t)
	wp.waitAcked(t, writerActAfter)
	wp.kill()
	<-wp.outDone
	reported := wp.acked.Load()

	c := cl.client(t)
	if md, err := c.Stat(ctx, id); err != nil || md.State == ledger.StateClosed {
		t.Fatalf("ledger %d before recovery: %v, %v; want it open (the writer was killed mid-stream)", id, md.State, err)
	}
	start := time.Now()
	h, err := c.Open(ctx, id, password)
	if err != nil {
		t.Fatalf("open with recovery: %v", err)
	}
	took := time.Since(start)
	md := h.Metadata()
	if md.State != ledger.StateClosed || md.LastEntryID < reported || md.LastEntryID >= wp.fed.Load() {
		t.Fatalf("recovered: state %v, end %d; the writer reported %d acknowledged, was fed %d entries",
			md.State, md.LastEntryID, reported, wp.fed.Load())
	}
	lost := readBack(t, ctx, h, md.LastEntryID)
	t.Logf("ledgerproc writer-kill: reported_acked=%d recovered_end=%d lost=%d recovery=%v",
		reported, md.LastEntryID, lost, took.Round(time.Millisecond))
}

// TestOldWriterFenced pauses a `keeper ledger write` process with SIGSTOP
// mid-stream, recovers its ledger from another client, and resumes it.
// The old writer must fail as fenced and exit non-zero (or, if the pause
// outlasted its bookie connections' write timeout, fail on those), and
// nothing it reports acknowledged, before the pause or after, may lie
// beyond the recovered end (docs/fault-model.md scenario 9: no divergence).
func TestOldWriterFenced(t *testing.T) {
	cl := startCluster(t, 3)
	ctx := testContext(t, 2*time.Minute)
	wp := startWriter(t, cl)
	id := wp.ledgerID(t)
	wp.waitAcked(t, writerActAfter)
	stoppedAt := time.Now()
	wp.signal(t, syscall.SIGSTOP)
	paused := wp.acked.Load()

	start := time.Now()
	h, err := cl.client(t).Open(ctx, id, password)
	if err != nil {
		t.Fatalf("open with recovery: %v", err)
	}
	took := time.Since(start)
	md := h.Metadata()
	wp.signal(t, syscall.SIGCONT)
	pausedFor := time.Since(stoppedAt)
	close(wp.stopFeed)
	exitErr := wp.wait(t, time.Minute)
	<-wp.outDone
	final := wp.acked.Load()

	log := wp.logTail()
	switch fenced := strings.Contains(log, "fenced by another client"); {
	case exitErr == nil:
		t.Errorf("old writer: exit %v, want non-zero; its output ends:\n%s", exitErr, log)
	case !fenced && pausedFor < bookierpc.WriteTimeout:
		t.Errorf("old writer: exit %v, want a fencing error; its output ends:\n%s", exitErr, log)
	case !fenced:
		// A pause longer than the bookie client's write timeout (recovery
		// on a loaded machine) ends the writer's connections when it
		// resumes, and with no spare bookie it fails on that before it
		// hears of the fence: a legal outcome, as long as nothing it
		// reported acknowledged is lost (checked below).
		t.Logf("old writer paused %v, past the write timeout %v: it failed on its connections: %s",
			pausedFor.Round(time.Millisecond), bookierpc.WriteTimeout, lastLine(log))
	}
	if md.State != ledger.StateClosed || md.LastEntryID < final {
		t.Fatalf("recovered: state %v, end %d; the old writer reported %d acknowledged (%d when paused)",
			md.State, md.LastEntryID, final, paused)
	}
	lost := readBack(t, ctx, h, md.LastEntryID)
	t.Logf("ledgerproc fenced-writer: acked_at_pause=%d acked_final=%d recovered_end=%d lost=%d recovery=%v exit=%q",
		paused, final, md.LastEntryID, lost, took.Round(time.Millisecond), lastLine(log))
}

// writerProc is a `keeper ledger write --progress` process, fed payload(i)
// as line i of its standard input, so entry i holds payload(i).
type writerProc struct {
	*proc
	created  chan int64    // the ledger id, once
	acked    atomic.Int64  // the highest entry id reported acknowledged; -1: none
	progress chan struct{} // capacity 1: acked moved
	outDone  chan struct{} // closed once its standard output is drained
	stopFeed chan struct{} // closed by the test to end the input early
	fed      atomic.Int64  // lines written to its standard input
}

// startWriter starts the writer with E=3, Qw=3, Qa=2 and feeds it
// writerEntries lines.
func startWriter(t *testing.T, cl *cluster) *writerProc {
	t.Helper()
	cmd := keeperCmd("ledger", "write", "--zk", cl.zkAddr, "--password", string(password),
		"-E", "3", "-Qw", "3", "-Qa", "2", "--progress", "--log-level", "warn",
		// Longer than any pause: TestOldWriterFenced's SIGSTOP must not look
		// like a failed bookie (with three bookies there is no replacement,
		// and the writer would fail for that before it hears of the fence).
		"--add-timeout", "2m")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Our own pipe, not StdoutPipe: Wait would close that one as soon as
	// the process exits, dropping lines not read yet.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	wp := &writerProc{created: make(chan int64, 1), progress: make(chan struct{}, 1), outDone: make(chan struct{}),
		stopFeed: make(chan struct{})}
	wp.acked.Store(-1)
	wp.proc = startProc(t, "writer", cmd)
	outW.Close()
	go wp.readOutput(outR)
	go wp.feed(stdin)
	return wp
}

// feed writes the entries, one per line, until all are written, the test
// stops it, or the process is gone.
func (wp *writerProc) feed(stdin io.WriteCloser) {
	defer stdin.Close()
	bw := bufio.NewWriterSize(stdin, 8<<10)
	for i := range int64(writerEntries) {
		select {
		case <-wp.stopFeed:
			_ = bw.Flush()
			return
		default:
		}
		bw.Write(payload(i))
		if err := bw.WriteByte('\n'); err != nil {
			return
		}
		wp.fed.Add(1)
	}
	_ = bw.Flush()
}

// readOutput follows the progress lines.
func (wp *writerProc) readOutput(r *os.File) {
	defer close(wp.outDone)
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if s, ok := strings.CutPrefix(line, "created "); ok {
			if id, err := strconv.ParseInt(s, 10, 64); err == nil {
				wp.created <- id
			}
		}
		if s, ok := strings.CutPrefix(line, "acked "); ok {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				wp.acked.Store(n)
				select {
				case wp.progress <- struct{}{}:
				default:
				}
			}
		}
	}
}

// ledgerID waits for the writer to report its ledger.
func (wp *writerProc) ledgerID(t *testing.T) int64 {
	t.Helper()
	select {
	case id := <-wp.created:
		return id
	case <-wp.exited:
		t.Fatalf("writer exited before creating its ledger:\n%s", wp.logTail())
	case <-time.After(startTimeout):
		t.Fatalf("writer created no ledger within %v:\n%s", startTimeout, wp.logTail())
	}
	return 0
}

// waitAcked waits until the writer has reported entry n acknowledged.
func (wp *writerProc) waitAcked(t *testing.T, n int64) {
	t.Helper()
	deadline := time.After(startTimeout)
	for wp.acked.Load() < n {
		select {
		case <-wp.progress:
		case <-wp.exited:
			t.Fatalf("writer exited after acknowledging %d entries:\n%s", wp.acked.Load()+1, wp.logTail())
		case <-deadline:
			t.Fatalf("writer acknowledged only %d entries in %v:\n%s", wp.acked.Load()+1, startTimeout, wp.logTail())
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
