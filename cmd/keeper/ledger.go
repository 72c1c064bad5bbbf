package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// ledgerFlags are the flags every `keeper ledger` subcommand shares.
type ledgerFlags struct {
	zk          string
	root        string
	password    string
	addTimeout  time.Duration
	readTimeout time.Duration
	v2          bool // BookKeeper's v2 protocol to the bookies
	explicitLAC time.Duration
	recoveryRB  int
	placement   placementFlags
	clientConf  clientConfFlag
}

// client connects a ledger client as the flags say. Its routine messages
// (a ledger closed, a bookie replaced) are logged only with --log-level
// debug or info given explicitly: a command's output is what it prints.
func (f *ledgerFlags) client(cmd *cobra.Command) (*ledgerclient.Client, error) {
	servers := strings.Split(f.zk, ",")
	if err := probeServers(servers, metadataProbeTimeout); err != nil {
		return nil, err
	}
	tlsSettings, err := f.clientConf.tls()
	if err != nil {
		return nil, err
	}
	zkSec, err := metadataSecurity()
	if err != nil {
		return nil, err
	}
	logger := newLogger()
	if fl := cmd.Root().PersistentFlags().Lookup("log-level"); fl == nil || !fl.Changed {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg := ledgerclient.Config{ZKServers: servers, LedgersRoot: f.root, Logger: logger,
		AddTimeout: f.addTimeout, ReadTimeout: f.readTimeout, UseV2WireProtocol: f.v2, TLS: tlsSettings, ZKSecurity: zkSec,
		ExplicitLACInterval: f.explicitLAC, RecoveryReadBatchSize: f.recoveryRB}
	if err := f.placement.apply(&cfg); err != nil {
		return nil, err
	}
	return ledgerclient.New(cfg)
}

// run connects a ledger client and runs fn with it, under a context that
// Ctrl-C and SIGTERM cancel.
func (f *ledgerFlags) run(cmd *cobra.Command, fn func(ctx context.Context, c *ledgerclient.Client) error) error {
	c, err := f.client(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := signalContext(cmd.Context())
	defer stop()
	return fn(ctx, c)
}

func newLedgerCmd() *cobra.Command {
	f := &ledgerFlags{}
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Create, write, read, tail, list, inspect, delete and recover ledgers",
		Long: `Work with BookKeeper-style ledgers stored on bookies, their metadata in a
ZooKeeper-compatible service (keeper or Apache ZooKeeper) under --ledgers-root.

  keeper ledger write -E 3 -Qw 2 -Qa 2 < lines.txt   one entry per line; prints the id
  keeper ledger write --count 10000 --size 1024     generated entries
  keeper ledger read 7                              entries up to the last (or the LAC)
  keeper ledger tail -f 7                           follow a ledger being written
  keeper ledger ls | stat 7 | delete 7 | recover 7
  keeper ledger underreplicated | recover-bookie <id> | decommission <id>
  keeper ledger triggeraudit | whoisauditor | lostbookierecoverydelay --get
  keeper ledger autorecovery [--enable | --disable]
  keeper ledger clusterinfo | queryautorecoverystatus [-v]`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.zk, "zk", "127.0.0.1:2181", "metadata servers, host:port, comma-separated")
	pf.StringVar(&f.root, "ledgers-root", metadata.DefaultRoot, "ledgers root znode")
	pf.StringVar(&f.password, "password", "", "ledger password")
	pf.DurationVar(&f.addTimeout, "add-timeout", ledgerclient.DefaultAddTimeout,
		"how long a bookie may take to acknowledge an add before it is replaced (addEntryTimeoutSec)")
	pf.DurationVar(&f.readTimeout, "read-timeout", ledgerclient.DefaultReadTimeout,
		"how long a bookie may take to answer a read (readEntryTimeoutSec)")
	pf.BoolVar(&f.v2, "v2", false,
		"speak BookKeeper's v2 protocol to the bookies, as Pulsar does (useV2WireProtocol)")
	pf.DurationVar(&f.explicitLAC, "explicit-lac-interval", 0,
		"a writer idle this long sends its LAC to the bookies, so tailing readers see its last entry (explicitLacInterval; 0 off; v3 only)")
	pf.IntVar(&f.recoveryRB, "recovery-read-batch-size", ledgerclient.DefaultRecoveryReadBatchSize,
		"entries recovery reads ahead at once (recoveryReadBatchSize)")
	f.placement.add(pf)
	f.clientConf.add(pf)
	cmd.AddCommand(newLedgerCreateCmd(f), newLedgerWriteCmd(f), newLedgerReadCmd(f), newLedgerTailCmd(f),
		newLedgerLsCmd(f), newLedgerStatCmd(f), newLedgerDeleteCmd(f), newLedgerRecoverCmd(f))
	cmd.AddCommand(newLedgerUnderreplicatedCmd(f), newLedgerRecoverBookieCmd(f), newLedgerDecommissionCmd(f),
		newLedgerTriggerAuditCmd(f), newLedgerWhoIsAuditorCmd(f), newLedgerLostBookieRecoveryDelayCmd(f),
		newLedgerAutorecoverySwitchCmd(f), newLedgerClusterInfoCmd(f), newLedgerQueryAutorecoveryStatusCmd(f))
	return cmd
}

// quorumFlags are the placement flags of create and write, spelled as in
// the BookKeeper shell: -E, -Qw, -Qa.
type quorumFlags struct {
	ensemble, writeQuorum, ackQuorum int
	digest                           string
}

func (q *quorumFlags) add(fs *pflag.FlagSet) {
	fs.IntVarP(&q.ensemble, "ensemble", "E", 3, "ensemble size: bookies the entries are striped over")
	fs.IntVar(&q.writeQuorum, "Qw", 2, "write quorum: bookies each entry is sent to")
	fs.IntVar(&q.ackQuorum, "Qa", 2, "ack quorum: acknowledgements that make an entry durable")
	fs.StringVar(&q.digest, "digest", "crc32c", "entry digest: crc32c, crc32, hmac or dummy")
}

// options returns the create options the flags describe, or an error
// for a placement no ledger can have: every value is used as given, none
// is replaced by a default.
func (q *quorumFlags) options(password string) (ledgerclient.CreateOptions, error) {
	digest, err := parseDigest(q.digest)
	if err != nil {
		return ledgerclient.CreateOptions{}, err
	}
	switch {
	case q.ensemble < 1:
		return ledgerclient.CreateOptions{}, fmt.Errorf("-E %d: the ensemble needs at least one bookie", q.ensemble)
	case q.writeQuorum < 1 || q.writeQuorum > q.ensemble:
		return ledgerclient.CreateOptions{}, fmt.Errorf("-Qw %d: the write quorum must be between 1 and the ensemble size (-E %d)",
			q.writeQuorum, q.ensemble)
	case q.ackQuorum < 1 || q.ackQuorum > q.writeQuorum:
		return ledgerclient.CreateOptions{}, fmt.Errorf("-Qa %d: the ack quorum must be between 1 and the write quorum (-Qw %d)",
			q.ackQuorum, q.writeQuorum)
	}
	return ledgerclient.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum, AckQuorum: q.ackQuorum,
		Digest: digest, Password: []byte(password)}, nil
}

// quorumShellFlags are -Qw and -Qa, which create and write take with one
// dash, as the BookKeeper shell spells them.
var quorumShellFlags = []string{"-Qw", "-Qa"}

func parseDigest(s string) (bkproto.DigestType, error) {
	switch strings.ToLower(s) {
	case "crc32c":
		return bkproto.DigestCRC32C, nil
	case "crc32":
		return bkproto.DigestCRC32, nil
	case "hmac":
		return bkproto.DigestHMAC, nil
	case "dummy":
		return bkproto.DigestDummy, nil
	}
	return 0, fmt.Errorf("unknown digest %q: want crc32c, crc32, hmac or dummy", s)
}

func newLedgerCreateCmd(f *ledgerFlags) *cobra.Command {
	q := &quorumFlags{}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an empty ledger and print its id (it stays open; recover closes it)",
		Args:  cobra.NoArgs,
	}
	q.add(cmd.Flags())
	withSingleDashFlags(cmd, quorumShellFlags, func(cmd *cobra.Command, args []string) error {
		opts, err := q.options(f.password)
		if err != nil {
			return err
		}
		return f.run(cmd, func(ctx context.Context, c *ledgerclient.Client) error {
			w, err := c.Create(ctx, opts)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), w.ID())
			return err
		})
	})
	return cmd
}

// writeFlags are `ledger write`'s own flags.
type writeFlags struct {
	quorumFlags
	count    int
	size     int
	noClose  bool
	progress bool
	json     bool
}

func newLedgerWriteCmd(f *ledgerFlags) *cobra.Command {
	w := &writeFlags{}
	cmd := &cobra.Command{
		Use:   "write",
		Short: "Create a ledger, append entries (lines of stdin, or generated), close it",
		Long: `Create a ledger and append entries to it, pipelined: one entry per line of
standard input (without the newline), or with --count N entries of --size bytes.
Then close the ledger (unless --no-close) and print its id on standard output
(with --json, a record of the id, entries, bytes, LAC and time instead), and
the number of entries and bytes and the rate on standard error.

With --progress it first prints "created <ledger-id>", then "acked <entry-id>"
each time the acknowledged prefix grows (lines are coalesced when acks come
faster than they can be printed; every line is written at once, unbuffered),
so that a process watching the writer knows the ledger and what was
acknowledged even if the writer dies.`,
		Args: cobra.NoArgs,
	}
	w.add(cmd.Flags())
	fl := cmd.Flags()
	fl.IntVar(&w.count, "count", 0, "append this many generated entries instead of reading stdin")
	fl.IntVar(&w.size, "size", 100, "bytes per generated entry")
	fl.BoolVar(&w.noClose, "no-close", false, "leave the ledger open (a reader must recover it)")
	fl.BoolVar(&w.progress, "progress", false, `print "created <id>", then "acked <entry-id>" as acks arrive`)
	fl.BoolVar(&w.json, "json", false, "print the result as a JSON record")
	withSingleDashFlags(cmd, quorumShellFlags, func(cmd *cobra.Command, args []string) error {
		opts, err := w.options(f.password)
		if err != nil {
			return err
		}
		switch {
		case w.count < 0:
			return fmt.Errorf("--count %d: want 0 (read stdin) or more", w.count)
		case w.count > 0 && w.size < 1:
			return fmt.Errorf("--size %d: an entry has at least one byte", w.size)
		}
		return f.run(cmd, func(ctx context.Context, c *ledgerclient.Client) error {
			return runLedgerWrite(ctx, c, opts, w, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		})
	})
	return cmd
}

// writeStats counts a write's acknowledged entries and keeps its first
// failure.
type writeStats struct {
	mu       sync.Mutex // guards below
	entries  int64
	bytes    int64
	firstErr error
}

// acked counts an acknowledged entry of n bytes, or keeps err.
func (s *writeStats) acked(n int, err error) {
	if err != nil {
		s.fail(err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries++
	s.bytes += int64(n)
}

// fail keeps err if it is the first failure.
func (s *writeStats) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstErr == nil {
		s.firstErr = err
	}
}

// failed reports whether an error was kept: once an add failed (the
// ledger was fenced, or too few bookies are left) every later one fails
// too, so the writer stops reading input.
func (s *writeStats) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstErr != nil
}

// runLedgerWrite creates the ledger, appends entries, pipelined, until the
// input ends or an add fails, and closes it.
func runLedgerWrite(ctx context.Context, c *ledgerclient.Client, opts ledgerclient.CreateOptions, wf *writeFlags,
	in io.Reader, out, errOut io.Writer) error {
	w, err := c.Create(ctx, opts)
	if err != nil {
		return err
	}
	var prog *writeProgress
	if wf.progress {
		if prog, err = startWriteProgress(out, w.ID()); err != nil {
			return err
		}
	}
	next := entrySource(wf, in)
	start := time.Now()
	var st writeStats
	var wg sync.WaitGroup
	for ctx.Err() == nil && !st.failed() {
		data, ok, err := next()
		if err != nil || !ok {
			st.fail(err)
			break
		}
		wg.Add(1)
		w.AppendAsync(data, func(id int64, err error) {
			defer wg.Done()
			st.acked(len(data), err)
			if err == nil && prog != nil {
				prog.acked(id)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if prog != nil {
		st.fail(prog.stop())
	}
	st.fail(ctx.Err())
	if !wf.noClose {
		st.fail(w.Close(context.WithoutCancel(ctx)))
	}
	fmt.Fprintf(errOut, "ledger %d: %d entries, %d bytes in %v (%.0f entries/s, %.2f MB/s), LAC %d\n", w.ID(), st.entries,
		st.bytes, elapsed.Round(time.Millisecond), float64(st.entries)/elapsed.Seconds(),
		float64(st.bytes)/1e6/elapsed.Seconds(), w.LAC())
	if wf.json {
		return errors.Join(st.firstErr, printJSON(out, writeRecord{Ledger: w.ID(), Entries: st.entries, Bytes: st.bytes,
			LAC: w.LAC(), Closed: !wf.noClose && st.firstErr == nil, ElapsedMs: elapsed.Milliseconds()}))
	}
	_, err = fmt.Fprintln(out, w.ID())
	return errors.Join(st.firstErr, err)
}

// writeRecord is `ledger write --json`'s output.
type writeRecord struct {
	Ledger    int64 `json:"ledger"`
	Entries   int64 `json:"entries"`
	Bytes     int64 `json:"bytes"`
	LAC       int64 `json:"lac"`
	Closed    bool  `json:"closed"`
	ElapsedMs int64 `json:"elapsedMs"`
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// writeProgress prints `ledger write --progress` lines: "created <id>"
// once, then "acked <entry-id>" whenever the acknowledged prefix has grown.
// Callbacks only record the id; a goroutine of its own prints, so a slow
// reader of the output never stalls the writer's callbacks, and acks that
// arrive while a line is being written are coalesced into the next line.
type writeProgress struct {
	out     io.Writer
	last    atomic.Int64  // highest acknowledged entry id; -1: none
	wake    chan struct{} // capacity 1: something new to print
	quit    chan struct{} // closed by stop
	done    chan struct{} // closed when the printer has returned
	printed int64         // printer goroutine only
	err     error         // the first write error; final once done is closed
}

// startWriteProgress prints the ledger id and starts the printer.
func startWriteProgress(out io.Writer, ledgerID int64) (*writeProgress, error) {
	if _, err := fmt.Fprintf(out, "created %d\n", ledgerID); err != nil {
		return nil, err
	}
	p := &writeProgress{out: out, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		printed: -1}
	p.last.Store(-1)
	go p.run()
	return p, nil
}

// acked records that entryID is acknowledged. Acks arrive in entry order.
func (p *writeProgress) acked(entryID int64) {
	p.last.Store(entryID)
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run prints until stop, then once more for the last acks.
func (p *writeProgress) run() {
	defer close(p.done)
	for {
		select {
		case <-p.wake:
			p.print()
		case <-p.quit:
			p.print()
			return
		}
	}
}

func (p *writeProgress) print() {
	last := p.last.Load()
	if last <= p.printed || p.err != nil {
		return
	}
	p.printed = last
	_, p.err = fmt.Fprintf(p.out, "acked %d\n", last)
}

// stop prints what is left and returns the first write error. Every
// callback must have run.
func (p *writeProgress) stop() error {
	close(p.quit)
	<-p.done
	return p.err
}

// entrySource returns the entries to write: --count generated ones, or
// the lines of in.
func entrySource(wf *writeFlags, in io.Reader) func() ([]byte, bool, error) {
	if wf.count > 0 {
		n := 0
		return func() ([]byte, bool, error) {
			if n == wf.count {
				return nil, false, nil
			}
			p := []byte(fmt.Sprintf("entry %d ", n))
			for len(p) < wf.size {
				p = append(p, 'a'+byte(len(p)%26))
			}
			p = p[:wf.size]
			n++
			return p, true, nil
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), bkproto.DefaultMaxFrameBytes-64<<10)
	return func() ([]byte, bool, error) {
		if !sc.Scan() {
			return nil, false, sc.Err()
		}
		return slices.Clone(sc.Bytes()), true, nil
	}
}

// readFlags are the output flags of read and tail.
type readFlags struct {
	from, to int64
	ids      bool
	follow   bool
}

// print writes one entry: its payload and a newline, after its id and a
// tab with --ids.
func (r *readFlags) print(out *bufio.Writer, e ledgerclient.Entry) {
	if r.ids {
		out.WriteString(strconv.FormatInt(e.EntryID, 10))
		out.WriteByte('\t')
	}
	out.Write(e.Payload)
	out.WriteByte('\n')
}

func newLedgerReadCmd(f *ledgerFlags) *cobra.Command {
	r := &readFlags{}
	cmd := &cobra.Command{
		Use:   "read <ledger-id>",
		Short: "Print a ledger's entries, one per line (an open ledger's up to its LAC)",
		Long: `Print entries --from..--to of a ledger, each payload on a line of its own
(after its id and a tab with --ids). --to -1 means the last entry of a closed
ledger, or the LAC of an open one. The ledger is opened without recovery: its
writer is not disturbed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withLedger(cmd, f, args[0], false, func(ctx context.Context, h *ledgerclient.ReadHandle) error {
				return runLedgerRead(ctx, h, r, cmd.OutOrStdout())
			})
		},
	}
	cmd.Flags().Int64Var(&r.from, "from", 0, "first entry")
	cmd.Flags().Int64Var(&r.to, "to", -1, "last entry; -1: the last readable")
	cmd.Flags().BoolVar(&r.ids, "ids", false, "print each entry's id and a tab first")
	return cmd
}

// readChunkEntries bounds the entries one Read call holds in memory.
const readChunkEntries = 1000

func runLedgerRead(ctx context.Context, h *ledgerclient.ReadHandle, r *readFlags, w io.Writer) error {
	last := r.to
	if last < 0 {
		lac, err := h.ReadLAC(ctx)
		if err != nil {
			return err
		}
		last = lac
	}
	out := bufio.NewWriter(w)
	defer out.Flush()
	for first := r.from; first <= last; first += readChunkEntries {
		entries, err := h.Read(ctx, first, min(last, first+readChunkEntries-1))
		for _, e := range entries {
			r.print(out, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func newLedgerTailCmd(f *ledgerFlags) *cobra.Command {
	r := &readFlags{}
	cmd := &cobra.Command{
		Use:   "tail <ledger-id>",
		Short: "Print a ledger's entries as they are confirmed; with -f, until it is closed",
		Long: `Print a ledger's entries from --from on, each once and in order, as in read.
Without -f it stops at the current LAC (the last entry of a closed ledger). With
-f it follows the writer, long-polling the bookies, until the ledger is closed
or the command is interrupted. Bookies learn that an entry is confirmed from the
next one, so the last entry of a quiet writer appears when the ledger closes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withLedger(cmd, f, args[0], false, func(ctx context.Context, h *ledgerclient.ReadHandle) error {
				if !r.follow {
					return runLedgerRead(ctx, h, r, cmd.OutOrStdout())
				}
				out := bufio.NewWriter(cmd.OutOrStdout())
				defer out.Flush()
				for e, err := range h.Tail(ctx, r.from) {
					if err != nil && ctx.Err() != nil {
						return nil // interrupted: the normal end of tail -f on an open ledger
					}
					if err != nil {
						return err
					}
					r.print(out, e)
					if err := out.Flush(); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&r.from, "from", 0, "first entry")
	cmd.Flags().BoolVarP(&r.follow, "follow", "f", false, "follow the ledger until it is closed")
	cmd.Flags().BoolVar(&r.ids, "ids", false, "print each entry's id and a tab first")
	r.to = -1
	return cmd
}

// withLedger connects, opens the ledger named by arg (with recovery if
// recovery is set), and runs fn.
func withLedger(cmd *cobra.Command, f *ledgerFlags, arg string, recovery bool,
	fn func(ctx context.Context, h *ledgerclient.ReadHandle) error) error {
	id, err := parseLedgerID(arg)
	if err != nil {
		return err
	}
	return f.run(cmd, func(ctx context.Context, c *ledgerclient.Client) error {
		open := c.OpenNoRecovery
		if recovery {
			open = c.Open
		}
		h, err := open(ctx, id, []byte(f.password))
		if err != nil {
			return ledgerError(id, err)
		}
		return fn(ctx, h)
	})
}

// ledgerError says that ledger id does not exist in those words, rather
// than as the metadata layer's chain.
func ledgerError(id int64, err error) error {
	if errors.Is(err, metadata.ErrNoLedger) {
		return fmt.Errorf("ledger %d does not exist", id)
	}
	return err
}

func parseLedgerID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("invalid ledger id %q", s)
	}
	return id, nil
}

func newLedgerLsCmd(f *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the ledger ids, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(ctx context.Context, c *ledgerclient.Client) error {
				ids, err := c.List(ctx)
				out := bufio.NewWriter(cmd.OutOrStdout())
				defer out.Flush()
				for _, id := range ids {
					fmt.Fprintln(out, id)
				}
				return err
			})
		},
	}
}

func newLedgerStatCmd(f *ledgerFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stat <ledger-id>",
		Short: "Print a ledger's metadata",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseLedgerID(args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c *ledgerclient.Client) error {
				md, err := c.Stat(ctx, id)
				if err != nil {
					return ledgerError(id, err)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), metadataRecord(id, md))
				}
				printMetadata(cmd.OutOrStdout(), id, md)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the metadata as a JSON record")
	return cmd
}

// statRecord is `ledger stat --json`'s output.
type statRecord struct {
	Ledger      int64             `json:"ledger"`
	State       string            `json:"state"`
	Ensemble    int               `json:"ensemble"`
	WriteQuorum int               `json:"writeQuorum"`
	AckQuorum   int               `json:"ackQuorum"`
	Digest      string            `json:"digest"`
	LastEntry   *int64            `json:"lastEntry,omitempty"` // closed ledgers only
	Length      *int64            `json:"length,omitempty"`    // closed ledgers only
	CTimeMs     int64             `json:"ctimeMs,omitempty"`
	Version     int64             `json:"version"`
	Segments    []segmentRecord   `json:"segments"`
	Custom      map[string]string `json:"custom,omitempty"`
}

type segmentRecord struct {
	FirstEntry int64    `json:"firstEntry"`
	Bookies    []string `json:"bookies"`
}

func metadataRecord(id int64, md ledger.Metadata) statRecord {
	r := statRecord{Ledger: id, State: fmt.Sprint(md.State), Ensemble: md.EnsembleSize, WriteQuorum: md.WriteQuorum,
		AckQuorum: md.AckQuorum, Digest: fmt.Sprint(md.DigestType), CTimeMs: md.CTimeMillis, Version: int64(md.Version),
		Segments: []segmentRecord{}}
	if md.State == ledger.StateClosed {
		last, length := md.LastEntryID, md.Length
		r.LastEntry, r.Length = &last, &length
	}
	for _, sg := range md.Segments {
		r.Segments = append(r.Segments, segmentRecord{FirstEntry: sg.FirstEntryID, Bookies: bookieStrings(sg.Bookies)})
	}
	if len(md.Custom) > 0 {
		r.Custom = map[string]string{}
		for k, v := range md.Custom {
			r.Custom[k] = string(v)
		}
	}
	return r
}

// printMetadata writes md as aligned "key value" lines.
func printMetadata(w io.Writer, id int64, md ledger.Metadata) {
	fmt.Fprintf(w, "ledger      %d\n", id)
	fmt.Fprintf(w, "state       %v\n", md.State)
	fmt.Fprintf(w, "quorums     E=%d Qw=%d Qa=%d\n", md.EnsembleSize, md.WriteQuorum, md.AckQuorum)
	fmt.Fprintf(w, "digest      %v\n", md.DigestType)
	if md.State == ledger.StateClosed {
		fmt.Fprintf(w, "last entry  %d\n", md.LastEntryID)
		fmt.Fprintf(w, "length      %d\n", md.Length)
	}
	if md.CTimeMillis > 0 {
		fmt.Fprintf(w, "created     %s\n", time.UnixMilli(md.CTimeMillis).UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "version     %d\n", md.Version)
	for _, s := range md.Segments {
		fmt.Fprintf(w, "segment     %d: %s\n", s.FirstEntryID, strings.Join(bookieStrings(s.Bookies), " "))
	}
	for _, k := range slices.Sorted(maps.Keys(md.Custom)) {
		fmt.Fprintf(w, "custom      %s=%q\n", k, md.Custom[k])
	}
}

func bookieStrings(ids []ledger.BookieID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func newLedgerDeleteCmd(f *ledgerFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete <ledger-id>...",
		Short: "Delete ledgers (bookies drop their entries at their next garbage collection)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids := make([]int64, len(args))
			for i, a := range args {
				id, err := parseLedgerID(a)
				if err != nil {
					return err
				}
				ids[i] = id
			}
			return f.run(cmd, func(ctx context.Context, c *ledgerclient.Client) error {
				for _, id := range ids {
					// Deleting a missing ledger is a mistake to report (a
					// wrong id), not a success.
					if _, err := c.Stat(ctx, id); err != nil {
						return ledgerError(id, err)
					}
					if err := c.Delete(ctx, id); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

func newLedgerRecoverCmd(f *ledgerFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "recover <ledger-id>",
		Short: "Open a ledger with recovery: fence its writer, find its end, close it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			return withLedger(cmd, f, args[0], true, func(ctx context.Context, h *ledgerclient.ReadHandle) error {
				md := h.Metadata()
				if asJSON {
					return printJSON(cmd.OutOrStdout(), recoverRecord{Ledger: h.ID(), LastEntry: md.LastEntryID,
						Length: md.Length, Segments: len(md.Segments), ElapsedMs: time.Since(start).Milliseconds()})
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "ledger %d: closed at entry %d, length %d, %d segment(s) (%v)\n",
					h.ID(), md.LastEntryID, md.Length, len(md.Segments), time.Since(start).Round(time.Millisecond))
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as a JSON record")
	return cmd
}

// recoverRecord is `ledger recover --json`'s output.
type recoverRecord struct {
	Ledger    int64 `json:"ledger"`
	LastEntry int64 `json:"lastEntry"`
	Length    int64 `json:"length"`
	Segments  int   `json:"segments"`
	ElapsedMs int64 `json:"elapsedMs"`
}
