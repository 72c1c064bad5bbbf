package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
)

func newToolSnapshotCmd(flags *toolFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Verify or dump snapshot files (snapshot.<zxid>)",
	}
	var logDir string
	verify := &cobra.Command{
		Use:   "verify <snapshot file|dataDir>",
		Short: "Check a snapshot's seals and digest, or every snapshot in a data directory",
		Long: `Read a snapshot (or every snapshot in a data directory, newest first) and check
its header, seals and digest record; print its zxid, node and session counts and
digest. A fuzzy snapshot's digest belongs to a zxid after the snapshot's own: it
is checked by replaying the log up to that zxid, from --txnlog (by default the
snapshot's own directory, where dataLogDir usually is). Fails if any snapshot
is damaged.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.env(cmd).verifySnapshots(args[0], logDir)
		},
	}
	verify.Flags().StringVar(&logDir, "txnlog", "", "the dataLogDir whose log checks fuzzy digests")
	var withData bool
	dump := &cobra.Command{
		Use:   "dump <snapshot file>",
		Short: "Print every node with its stat, and the sessions, as ZooKeeper's SnapshotFormatter",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.env(cmd).dumpSnapshot(args[0], withData)
		},
	}
	dump.Flags().BoolVarP(&withData, "data", "d", false, "print each node's data (base64) and ACL")
	cmd.AddCommand(verify, dump)
	return cmd
}

// verifySnapshots verifies one snapshot file, or every snapshot of a data
// directory.
func (e *toolEnv) verifySnapshots(arg, logArg string) error {
	fi, err := e.fs.Stat(arg)
	if err != nil {
		return err
	}
	var snapDir string
	var infos []snap.Info
	if fi.IsDir() {
		dataDir, err := dataDirOf(e.fs, arg)
		if err != nil {
			return err
		}
		snapDir = filepath.Join(dataDir, txnlog.DirName)
		if infos, err = snap.List(e.fs, snapDir); err != nil {
			return err
		}
	} else {
		snapDir = filepath.Dir(filepath.Clean(arg))
		info := snap.Info{Name: filepath.Base(arg), Zxid: zxid.None, Size: fi.Size()}
		if z, c, ok := snap.ParseName(info.Name); ok {
			info.Zxid, info.Compression = z, c
		}
		infos = []snap.Info{info}
	}
	logDir := filepath.Dir(snapDir) // dataLogDir is usually dataDir
	if logArg != "" {
		if logDir, err = dataDirOf(e.fs, logArg); err != nil {
			return err
		}
	}
	if len(infos) == 0 {
		e.printf("no snapshots in %s\n", snapDir)
		return nil
	}
	bad, usable := 0, ""
	for _, info := range infos {
		path := filepath.Join(snapDir, info.Name)
		v := e.verifySnapshot(snapDir, info, logDir)
		switch {
		case v.err != nil:
			e.printf("%s: DAMAGED: %v\n", path, v.err)
			bad++
		case v.warning != "":
			e.printf("%s: SKIPPED BY RECOVERY: %s; %s\n", path, v.summary, v.warning)
		default:
			e.printf("%s: OK: %s\n", path, v.summary)
			if usable == "" {
				usable = info.Name
			}
		}
	}
	if fi.IsDir() {
		if usable != "" {
			e.printf("a restart loads %s\n", usable)
		} else {
			e.printf("no usable snapshot: a restart replays the whole log\n")
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d snapshots are damaged", bad, len(infos))
	}
	return nil
}

// snapshotVerdict is verify's finding on one snapshot.
type snapshotVerdict struct {
	summary string // zxid, counts, digest
	// warning is set for an intact file whose digest record, taken at the
	// snapshot's own zxid, does not match the stored tree: ZooKeeper 3.8
	// writes such records when txns apply while it serialises (and one
	// with zxid 0 and digest 0 in snapshot.0), while keeper's recovery
	// skips such a file as if it were damaged.
	warning string
	err     error // damage
}

// verifySnapshot reads one snapshot and checks its digest, replaying the
// log in logDir for a fuzzy one.
func (e *toolEnv) verifySnapshot(dir string, info snap.Info, logDir string) snapshotVerdict {
	if info.Zxid != zxid.None {
		if err := snap.QuickCheck(e.fs, dir, info); err != nil {
			return snapshotVerdict{err: err}
		}
	}
	sn, err := snap.Read(e.fs, filepath.Join(dir, info.Name), e.maxRecordBytes)
	if sn == nil {
		return snapshotVerdict{err: err}
	}
	v := snapshotVerdict{summary: fmt.Sprintf("zxid %v, %d nodes, %d sessions", sn.Zxid, sn.Tree.NodeCount()-1, len(sn.Sessions))}
	d := sn.Digest
	switch {
	case errors.Is(err, snap.ErrDigestMismatch):
		v.summary += fmt.Sprintf(", seals intact, digest record %d at zxid %v", d.TreeDigest, d.Zxid)
		v.warning = fmt.Sprintf("the stored tree's digest is %d (ZooKeeper 3.8 writes such records: a zero one in "+
			"snapshot.0, and ones that predate txns it applied while serialising)", sn.Tree.Digest())
	case err != nil:
		v.err = err
	case d == nil:
		v.summary += ", no digest record"
	case sn.DigestChecked:
		v.summary += fmt.Sprintf(", digest %d matches the tree", d.TreeDigest)
	case d.Version != datatree.DigestVersion:
		v.summary += fmt.Sprintf(", digest of unknown version %d not checked", d.Version)
	case sn.Zxid == zxid.None || d.Zxid < sn.Zxid:
		v.summary += fmt.Sprintf(", digest record for zxid %v ignored, as ZooKeeper ignores it", d.Zxid)
	default:
		if note, err := e.replayDigest(logDir, sn); err != nil {
			v.err = err
		} else {
			v.summary += ", " + note
		}
	}
	return v
}

// replayDigest checks a fuzzy snapshot's digest: it applies the log's txns
// after the snapshot up to the digest's zxid and compares. Problems with
// the log leave the digest unchecked; a mismatch is an error.
func (e *toolEnv) replayDigest(logDir string, sn *snap.Snapshot) (string, error) {
	d := sn.Digest
	unchecked := func(why string, args ...any) (string, error) {
		return fmt.Sprintf("digest %d at zxid %v not checked: ", d.TreeDigest, d.Zxid) + fmt.Sprintf(why, args...), nil
	}
	it, err := txnlog.Read(e.fs, logDir, sn.Zxid+1, e.logConfig())
	if err != nil {
		return unchecked("%v", err)
	}
	defer it.Close()
	tree, last := sn.Tree, sn.Zxid
	for last < d.Zxid {
		t, err := it.Next()
		switch {
		case errors.Is(err, io.EOF):
			return unchecked("the log in %s ends at %v", logDir, last)
		case errors.Is(err, txn.ErrUnknownType):
			continue
		case err != nil:
			return unchecked("%v", err)
		case t.Header.Zxid <= last:
			continue
		case !follows(last, t.Header.Zxid):
			return unchecked("txns missing from the log after %v", last)
		}
		tree.Apply(t)
		last = t.Header.Zxid
	}
	if got := tree.Digest(); got != d.TreeDigest {
		return "", fmt.Errorf("%w: after replaying the log to %v the tree digest is %d, the snapshot recorded %d",
			snap.ErrDigestMismatch, d.Zxid, got, d.TreeDigest)
	}
	return fmt.Sprintf("digest %d at zxid %v matches after replaying the log from %v", d.TreeDigest, d.Zxid, sn.Zxid+1), nil
}

// dumpSnapshot prints a snapshot as ZooKeeper's SnapshotFormatter does:
// every node (pre-order, children sorted) with its stored stat, then the
// sessions with their ephemeral counts, then the last zxid.
func (e *toolEnv) dumpSnapshot(path string, withData bool) error {
	sn, err := snap.Read(e.fs, path, e.maxRecordBytes)
	if sn == nil {
		return err
	}
	// An intact file whose digest record does not match its tree is still
	// worth looking at; the mismatch is reported after the dump.
	defer func() {
		if err != nil {
			e.printf("WARNING: %v\n", err)
		}
	}()
	tree := sn.Tree
	e.printf("ZNode Details (count=%d):\n", tree.NodeCount())
	e.printf("----\n")
	stack := []string{"/"}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := tree.Node(p)
		e.printNode(tree, p, n, withData)
		kids := n.Children()
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, strings.TrimSuffix(p, "/")+"/"+kids[i])
		}
	}
	e.printf("Session Details (sid, timeout, ephemeralCount):\n")
	for _, s := range sn.Sessions {
		e.printf("0x%x, %d, %d\n", uint64(s.ID), s.TimeoutMs, len(tree.Ephemerals(s.ID)))
	}
	e.printf("----\n")
	last := sn.Zxid
	if sn.Digest != nil && sn.Digest.Zxid > last {
		last = sn.Digest.Zxid // a fuzzy snapshot holds txns up to its digest's zxid
	}
	e.printf("Last zxid: 0x%x\n", uint64(last))
	if d := sn.Digest; d != nil {
		e.printf("Digest: %d at zxid 0x%x (version %d)\n", d.TreeDigest, uint64(d.Zxid), d.Version)
	}
	return nil
}

// printNode prints one node's block.
func (e *toolEnv) printNode(tree *datatree.Tree, path string, n *datatree.Node, withData bool) {
	st := n.Persisted()
	e.printf("%s\n", path)
	e.printf("  cZxid = 0x%014x\n  ctime = %s\n  mZxid = 0x%014x\n  mtime = %s\n  pZxid = 0x%014x\n",
		uint64(st.Czxid), javaDate(st.Ctime, e.loc), uint64(st.Mzxid), javaDate(st.Mtime, e.loc), uint64(st.Pzxid))
	e.printf("  cversion = %d\n  dataVersion = %d\n  aclVersion = %d\n  ephemeralOwner = 0x%014x\n",
		st.Cversion, st.Version, st.Aversion, uint64(st.EphemeralOwner))
	if withData {
		data := "(null)"
		if n.Data() != nil {
			data = base64.StdEncoding.EncodeToString(n.Data())
		}
		e.printf("  data = %s\n  acl = %s\n", data, aclText(tree.ACL(n)))
	} else {
		e.printf("  dataLength = %d\n", len(n.Data()))
	}
	e.printf("----\n")
}
