package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"keeper/coordination/jute"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

func newToolTxnlogCmd(flags *toolFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "txnlog",
		Short: "Verify, dump or truncate a transaction log (log.<zxid> files)",
	}
	var from string
	dump := &cobra.Command{
		Use:   "dump <dataLogDir|log file>",
		Short: "Print one line per txn: time, session, cxid, zxid, type and the record's fields",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.env(cmd).dumpLog(args[0], from)
		},
	}
	dump.Flags().StringVar(&from, "from", "", "start at this zxid (0x<hex> or decimal)")

	var z, dataDir string
	var yes bool
	truncate := &cobra.Command{
		Use:   "truncate <dataLogDir> --zxid Z --yes",
		Short: "Remove every txn after zxid Z, and the snapshots that hold such txns",
		Long: `Remove every txn with a zxid above Z from the log, as a follower does when its
leader sends TRUNC. Snapshots in the data directory (--data-dir, by default the
log's directory) that hold effects of txns above Z are removed too, since a
restart would otherwise restore them. Without --yes it only prints the plan;
with it, it locks the directories as a server does, so it refuses to run while a
server uses them.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if z == "" {
				return errors.New("--zxid is required")
			}
			return flags.env(cmd).truncateLog(args[0], dataDir, z, yes)
		},
	}
	truncate.Flags().StringVar(&z, "zxid", "", "the last zxid to keep (0x<hex> or decimal)")
	truncate.Flags().StringVar(&dataDir, "data-dir", "", "the dataDir whose snapshots to check (default: the log's directory)")
	truncate.Flags().BoolVar(&yes, "yes", false, "really change the files")

	verify := &cobra.Command{
		Use:   "verify <dataLogDir>",
		Short: "Read every log file and check every record; exit non-zero on damage",
		Long: `Read every log file and check every record: checksums, end markers, zxid
order, and that no txn is missing between records or files. Prints each file's
txn count and zxid range. Damage is reported with its file and offset and makes
the command fail; a torn tail (the end of an append a crash interrupted) is
reported as repairable: keeper cuts it off when it starts, since it holds no
acknowledged txn.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.env(cmd).verifyLog(args[0])
		},
	}
	cmd.AddCommand(verify, dump, truncate)
	return cmd
}

// logFileSummary is what verify reports for one file.
type logFileSummary struct {
	file        txnlog.File
	txns        int
	unknown     int // intact records of a type keeper cannot decode
	first, last zxid.ID
	end         int64 // where the file's data ends
}

func (s *logFileSummary) String() string {
	if s.txns+s.unknown == 0 {
		return fmt.Sprintf("%s: no txns", s.file.Path)
	}
	line := fmt.Sprintf("%s: %d txns, zxids %v-%v, data ends at offset %d", s.file.Path, s.txns+s.unknown, s.first, s.last, s.end)
	if s.unknown > 0 {
		line += fmt.Sprintf(" (%d of an unknown type)", s.unknown)
	}
	return line
}

// logVerifier walks a log for verify.
type logVerifier struct {
	sums    []*logFileSummary
	byPath  map[string]*logFileSummary
	prev    zxid.ID
	started bool
	total   int
}

// record accounts for the record the iterator just read, with zxid z.
func (v *logVerifier) record(it *txnlog.Iterator, z zxid.ID, unknown bool) error {
	path, off := it.Position()
	s := v.byPath[path]
	if v.started && !follows(v.prev, z) {
		return fmt.Errorf("txns missing from the log: %v follows %v (%s at offset %d)", z, v.prev, path, off)
	}
	v.started, v.prev = true, z
	if s.txns+s.unknown == 0 {
		s.first = z
	}
	s.last = z
	s.end = off + txnlog.RecordOverheadBytes + int64(len(it.Payload()))
	if unknown {
		s.unknown++
	} else {
		s.txns++
	}
	v.total++
	return nil
}

func (e *toolEnv) verifyLog(arg string) error {
	dir, err := dataDirOf(e.fs, arg)
	if err != nil {
		return err
	}
	files, err := txnlog.Files(e.fs, dir)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		e.printf("no log files in %s\n", filepath.Join(dir, txnlog.DirName))
		return nil
	}
	v := &logVerifier{byPath: make(map[string]*logFileSummary)}
	for _, f := range files {
		s := &logFileSummary{file: f, end: txnlog.FileHeaderBytes}
		v.sums = append(v.sums, s)
		v.byPath[f.Path] = s
	}
	it, err := txnlog.Read(e.fs, dir, 0, e.logConfig())
	if err != nil {
		return err
	}
	defer it.Close()
	damage := v.walk(it)
	for _, s := range v.sums {
		e.printf("%s\n", s)
	}
	var torn *txnlog.RecordError
	switch {
	case damage == nil:
		e.printf("log OK: %d files, %d txns, zxids %v-%v\n", len(files), v.total, v.sums[0].first, v.prev)
		return nil
	case errors.Is(damage, txnlog.ErrTorn) && errors.As(damage, &torn):
		e.printf("torn tail in %s at offset %d (%s): repairable, it holds no acknowledged txn; "+
			"keeper cuts it off when it starts\n", torn.File, torn.Offset, torn.Reason)
		e.printf("log OK up to the torn tail: %d files, %d txns, last zxid %v\n", len(files), v.total, v.prev)
		return nil
	}
	return fmt.Errorf("log damaged: %w", damage)
}

// walk reads the whole log and returns the damage that stopped it, if any.
func (v *logVerifier) walk(it *txnlog.Iterator) error {
	for {
		t, err := it.Next()
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, txn.ErrUnknownType):
			if err := v.record(it, headerOf(it.Payload()).Zxid, true); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if err := v.record(it, t.Header.Zxid, false); err != nil {
				return err
			}
		}
	}
}

// headerOf decodes the txn header at the start of an intact payload.
func headerOf(payload []byte) txn.Header {
	var h txn.Header
	h.Decode(jute.NewDecoder(payload, len(payload)))
	return h
}

// dumpLog prints every txn of the log in arg from the zxid from on. If arg
// is one log file, only that file is printed.
func (e *toolEnv) dumpLog(arg, fromFlag string) error {
	dir, only, err := e.logTarget(arg)
	if err != nil {
		return err
	}
	from := zxid.ID(0)
	if only != "" {
		start, _ := txnlog.ParseFileName(filepath.Base(only))
		from = start
	}
	if fromFlag != "" {
		if from, err = parseZxid(fromFlag); err != nil {
			return err
		}
	}
	it, err := txnlog.Read(e.fs, dir, from, e.logConfig())
	if err != nil {
		return err
	}
	defer it.Close()
	n, cur := 0, ""
	for {
		t, err := it.Next()
		path := recordFile(it, err)
		if errors.Is(err, io.EOF) || (only != "" && path != only) {
			break
		}
		if path != cur && (err == nil || errors.Is(err, txn.ErrUnknownType)) {
			e.printf("# %s (log format version %d)\n", path, txnlog.Version)
			cur = path
		}
		switch {
		case errors.Is(err, txn.ErrUnknownType):
			h := headerOf(it.Payload())
			e.printf("%s %s (%d bytes)\n", e.headerText(h), typeName(h.Type), len(it.Payload()))
			n++
			continue
		case errors.Is(err, txnlog.ErrTorn):
			e.printf("end of log after %d txns: %v (a torn tail: repairable)\n", n, err)
			return nil
		case err != nil:
			return fmt.Errorf("after %d txns: %w", n, err)
		}
		e.printf("%s\n", e.txnLine(t))
		n++
	}
	e.printf("end of log after %d txns\n", n)
	return nil
}

// recordFile returns the file of the record Next just returned, or of the
// damage it reported.
func recordFile(it *txnlog.Iterator, err error) string {
	var rerr *txnlog.RecordError
	if errors.As(err, &rerr) {
		return rerr.File
	}
	path, _ := it.Position()
	return path
}

// logTarget resolves dump's argument: a data directory, or one log file in
// it (then only is its path).
func (e *toolEnv) logTarget(arg string) (dir, only string, err error) {
	if _, ok := txnlog.ParseFileName(filepath.Base(arg)); ok {
		if fi, err := e.fs.Stat(arg); err == nil && !fi.IsDir() {
			versionDir := filepath.Dir(filepath.Clean(arg))
			return filepath.Dir(versionDir), filepath.Join(versionDir, filepath.Base(arg)), nil
		}
	}
	dir, err = dataDirOf(e.fs, arg)
	return dir, "", err
}

// headerText renders a txn header as ZooKeeper's TxnLogToolkit does: the
// time as Java's short date and long time, then session, cxid and zxid in
// hex.
func (e *toolEnv) headerText(h txn.Header) string {
	return fmt.Sprintf("%s session 0x%x cxid 0x%x zxid 0x%x",
		time.UnixMilli(h.Time).In(e.loc).Format("1/2/06, 3:04:05 PM MST"),
		uint64(h.ClientID), uint64(int64(h.Cxid)), uint64(h.Zxid))
}

// txnLine is one txn: its header, its type and its record's fields.
func (e *toolEnv) txnLine(t *txn.Txn) string {
	line := e.headerText(t.Header) + " " + typeName(t.Header.Type)
	if f := recordFields(t.Record); f != "" {
		line += " " + f
	}
	return line
}

// typeName names a txn type as ZooKeeper's tools do.
func typeName(op zkproto.Op) string {
	if op == zkproto.OpCreateTTL {
		return "createTtl"
	}
	return op.String()
}

// recordFields renders a record's fields, comma-separated, in the record's
// order. Data prints as a quoted Go string, or null; ACLs as
// scheme:id:perms lists.
func recordFields(r jute.Record) string {
	switch r := r.(type) {
	case *txn.Create:
		return fmt.Sprintf("%s,%s,%s,%t,%d", r.Path, dataText(r.Data), aclText(r.ACL), r.Ephemeral, r.ParentCversion)
	case *txn.CreateContainer:
		return fmt.Sprintf("%s,%s,%s,%d", r.Path, dataText(r.Data), aclText(r.ACL), r.ParentCversion)
	case *txn.CreateTTL:
		return fmt.Sprintf("%s,%s,%s,%d,%d", r.Path, dataText(r.Data), aclText(r.ACL), r.ParentCversion, r.TTL)
	case *txn.Delete:
		return r.Path
	case *txn.SetData:
		return fmt.Sprintf("%s,%s,%d", r.Path, dataText(r.Data), r.Version)
	case *txn.SetACL:
		return fmt.Sprintf("%s,%s,%d", r.Path, aclText(r.ACL), r.Version)
	case *txn.CheckVersion:
		return fmt.Sprintf("%s,%d", r.Path, r.Version)
	case *txn.CreateSession:
		return strconv.Itoa(int(r.TimeoutMs))
	case *txn.CloseSession:
		if r.NoBody {
			return ""
		}
		return "[" + strings.Join(r.Paths, ",") + "]"
	case *txn.Error:
		return fmt.Sprintf("%d %s", r.Err, zkproto.Code(r.Err))
	case *txn.Multi:
		parts := make([]string, len(r.Ops))
		for i, op := range r.Ops {
			parts[i] = typeName(op.Type)
			if f := recordFields(op.Record); f != "" {
				parts[i] += " " + f
			}
		}
		return "[" + strings.Join(parts, "; ") + "]"
	}
	return fmt.Sprintf("%+v", r)
}

// dataText quotes data so that any bytes print on one line; null is null.
func dataText(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

// aclText renders an ACL list as [scheme:id:perms,...].
func aclText(acl []zkproto.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = a.ID.Scheme + ":" + a.ID.ID + ":" + permString(a.Perms)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// truncateLog cuts the log after zxid zArg, with the snapshots that hold
// txns after it; without yes it prints the plan and fails.
func (e *toolEnv) truncateLog(arg, dataDirArg, zArg string, yes bool) error {
	dir, err := dataDirOf(e.fs, arg)
	if err != nil {
		return err
	}
	z, err := parseZxid(zArg)
	if err != nil {
		return err
	}
	dataDir := dir
	if dataDirArg != "" {
		if dataDir, err = dataDirOf(e.fs, dataDirArg); err != nil {
			return err
		}
	}
	if yes { // locked before the plan is made, so that the plan is what runs
		lock, err := vfs.LockDirs(e.fs, dir, dataDir)
		if err != nil {
			return err
		}
		defer lock.Close() // releasing the lock loses nothing
	}
	files, err := txnlog.Files(e.fs, dir)
	if err != nil {
		return err
	}
	last := -1 // the file that will hold z
	for i, f := range files {
		if f.Start > z {
			e.printf("remove %s\n", f.Path)
		} else {
			last = i
		}
	}
	if last >= 0 {
		e.printf("keep %s up to zxid %v\n", files[last].Path, z)
	}
	stale, err := e.snapshotsAfter(dataDir, z)
	if err != nil {
		return err
	}
	for _, path := range stale {
		e.printf("remove %s (it holds txns after %v)\n", path, z)
	}
	if !yes {
		return errors.New("refusing to change the files without --yes")
	}
	if err := txnlog.Truncate(e.fs, dir, z, e.logConfig()); err != nil {
		return err
	}
	for _, path := range stale {
		if err := e.fs.Remove(path); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
	}
	if len(stale) > 0 {
		if err := e.fs.SyncDir(filepath.Join(dataDir, txnlog.DirName)); err != nil {
			return err
		}
	}
	e.printf("log truncated after zxid %v\n", z)
	return nil
}

// snapshotsAfter lists the snapshots in dataDir that hold effects of txns
// after z: those named after a later zxid, and fuzzy ones whose digest
// record was taken after z. A snapshot that cannot be read is left alone:
// recovery skips it anyway.
func (e *toolEnv) snapshotsAfter(dataDir string, z zxid.ID) ([]string, error) {
	snapDir := filepath.Join(dataDir, txnlog.DirName)
	infos, err := snap.List(e.fs, snapDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, info := range infos {
		path := filepath.Join(snapDir, info.Name)
		if info.Zxid > z {
			out = append(out, path)
			continue
		}
		sn, err := snap.Read(e.fs, path, e.maxRecordBytes)
		if err == nil && sn.Digest != nil && sn.Digest.Zxid > z {
			out = append(out, path)
		}
	}
	return out, nil
}
