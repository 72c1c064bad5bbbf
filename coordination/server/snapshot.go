package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sync/atomic"
	"time"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// defaultSnapshotChunks bounds the encoded nodes waiting for the writer:
// the loop stops stepping the walk (but keeps serving) while the disk
// catches up.
const defaultSnapshotChunks = 8

// snapshotGoroutines makes snapshot jobs run as a server's do: the writer
// on a goroutine of its own, Close waiting for it, its result sent to the
// loop's snapDone.
func (s *Server) snapshotGoroutines() {
	s.snapshotChunks = defaultSnapshotChunks
	s.walkOffLoop = true
	s.spawnWriter = func(job *snapshotJob) {
		s.snapWriters.Add(1)
		go func() {
			defer s.snapWriters.Done()
			s.writeSnapshot(job)
		}()
		if job.offLoop {
			s.snapWriters.Add(1)
			go func() {
				defer s.snapWriters.Done()
				s.walkSnapshot(job, job.tree)
			}()
		}
	}
	s.snapshotWritten = func(res snapshotResult) {
		select {
		case s.snapDone <- res:
		case <-s.stopped: // the loop is gone; Close is waiting for us
		}
	}
}

// snapshotJob is a fuzzy snapshot in progress. A walker goroutine walks
// the tree a step at a time beside the loop, which goes on applying txns
// (datatree.StartFuzzyBodyConcurrent; in a Member the loop itself steps
// the walk between requests), and hands the encoded nodes to a writer
// goroutine. Writes never stop for it (docs/zookeeper-protocol.md §9.4). The writer streams the
// nodes into the snapshot file after the ACL lists cached when the walk
// started; if a node written uses a list cached later (the body is Late),
// that file is abandoned and the next snapshot is staged: its nodes go to a
// staging file first, and the snapshot is written around them with the
// lists the nodes used.
type snapshotJob struct {
	zxid     zxid.ID // the last txn applied when the walk started
	began    time.Time
	sessions []snap.SessionEntry
	body     *datatree.FuzzyBody
	leading  []byte // the body's leading ACL section, fixed at the start
	staged   bool
	chunks   chan []byte
	free     chan []byte // chunks the writer is done with, for the walk to reuse

	// Set by whoever walks (the loop, or the walker goroutine of a job
	// walked off the loop) before it closes chunks; read by the writer
	// after. walked says the walk is complete, to the loop too, which
	// must not read them while a walker goroutine may write them.
	aclSection []byte
	late       bool
	digest     *snap.Digest
	walked     atomic.Bool
	aborted    atomic.Bool

	// offLoop: the walker goroutine steps the walk of tree, and stops
	// when the loop sets stopWalk.
	offLoop  bool
	tree     *datatree.Tree
	stopWalk atomic.Bool
}

// errLateACL is how a streamed snapshot that met an ACL list newer than
// its walk reports.
var errLateACL = errors.New("server: a node written uses an ACL list cached after the snapshot started")

// snapshotResult is what the writer reports back to the loop.
type snapshotResult struct {
	name  string
	nodes int
	err   error
}

// startSnapshot begins a snapshot of the tree as it is now; the log rolls
// so that the snapshot's txns and the later ones sit in separate files.
func (s *Server) startSnapshot() {
	if s.disk != nil {
		s.disk.requestRoll() // the persister owns the log
	}
	s.trigger.Reset(s.rng)
	s.sinceSnapshot = 0
	tree := s.core.Tree()
	job := &snapshotJob{
		began:   time.Now(),
		zxid:    s.core.LastZxid(),
		body:    s.startWalk(tree),
		staged:  s.stageNextSnapshot,
		chunks:  make(chan []byte, s.snapshotChunks),
		free:    make(chan []byte, s.snapshotChunks+1),
		offLoop: s.walkOffLoop,
		tree:    tree,
	}
	job.leading = job.body.LeadingACLSection()
	s.stageNextSnapshot = false
	for _, ss := range s.core.SnapshotSessions() {
		job.sessions = append(job.sessions, snap.SessionEntry{ID: ss.ID, TimeoutMs: ss.TimeoutMs})
	}
	s.snapshot = job
	s.log.Info("snapshot started", "zxid", job.zxid)
	if s.snapshotStarted != nil {
		s.snapshotStarted(job.zxid)
	}
	s.spawnWriter(job)
}

// startWalk begins the walk of a snapshot: in name order in a Member
// (whose runs must replay exactly), else in the tree's own order, by a
// walker goroutine where the server has one.
func (s *Server) startWalk(tree *datatree.Tree) *datatree.FuzzyBody {
	switch {
	case s.walkInOrder:
		return tree.StartFuzzyBodyInOrder()
	case s.walkOffLoop:
		return tree.StartFuzzyBodyConcurrent()
	}
	return tree.StartFuzzyBody()
}

// walkSnapshot is the walker goroutine of a job walked off the loop: it
// steps the walk while the loop applies txns, hands each step's nodes to
// the writer (waiting while the writer has no room), and at the end
// records what stepSnapshot records on the loop, with the digest and zxid
// the tree had when the walk completed. It stops early when the loop
// aborts the job.
func (s *Server) walkSnapshot(job *snapshotJob, tree *datatree.Tree) {
	for {
		if job.stopWalk.Load() {
			job.body.AbortConcurrent(tree)
			job.aborted.Store(true)
			close(job.chunks)
			return
		}
		if job.step(tree, s.cfg.Storage.SnapshotStepNodes) {
			return
		}
	}
}

// step walks up to nodes more nodes of tree, on the walker goroutine when
// the job is walked off the loop, else on the loop; hands them to the
// writer (the walk reusing a buffer the writer is done with); and when
// the walk is complete records its ACL section and the tree's digest
// and zxid at its end, and closes chunks. It reports whether the walk is
// complete.
func (job *snapshotJob) step(tree *datatree.Tree, nodes int) bool {
	select {
	case b := <-job.free:
		job.body.Reuse(b)
	default:
	}
	var done bool
	if job.offLoop {
		done = job.body.StepConcurrent(tree, nodes)
	} else {
		done = job.body.Step(tree, nodes)
	}
	if chunk := job.body.Take(); len(chunk) > 0 {
		job.chunks <- chunk // off the loop, this waits while the writer has no room
	}
	if done {
		job.aclSection = job.body.ACLSection()
		job.late = job.body.Late()
		var z zxid.ID
		var digest int64
		if job.offLoop {
			z, digest = job.body.End() // read with the last step, under the walk's lock
		} else {
			z, digest = tree.LastZxid(), tree.Digest() // on the loop, which alone changes the tree
		}
		job.digest = &snap.Digest{Zxid: z, Version: datatree.DigestVersion, TreeDigest: digest}
		job.walked.Store(true)
		close(job.chunks)
	}
	return done
}

// snapshotStep returns a channel that is ready when the loop should walk the
// next part of the tree: a snapshot is being walked and the writer has room.
func (s *Server) snapshotStep() <-chan struct{} {
	if s.snapshotStepReady() {
		return closedChan
	}
	return nil
}

// snapshotStepReady reports whether a snapshot is being walked and the
// writer has room for the next step's nodes.
func (s *Server) snapshotStepReady() bool {
	job := s.snapshot
	return job != nil && !job.offLoop && !job.walked.Load() && !job.aborted.Load() && len(job.chunks) < cap(job.chunks)
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// stepSnapshot walks part of the tree. When the walk ends it records the
// tree digest and the zxid it belongs to: the last txn applied now.
func (s *Server) stepSnapshot() {
	s.snapshot.step(s.core.Tree(), s.cfg.Storage.SnapshotStepNodes)
}

// errSnapshotAborted is how the writer of an aborted job reports.
var errSnapshotAborted = errors.New("server: snapshot aborted")

// abortSnapshot stops a snapshot whose walk the loop will not finish; its
// writer still reports (errSnapshotAborted). A job whose walk is done is
// left to finish.
func (s *Server) abortSnapshot() {
	if job := s.snapshot; job != nil && job.offLoop {
		job.stopWalk.Store(true) // the walker ends the walk, unless it ended already
		return
	}
	if job := s.snapshot; job != nil && !job.walked.Load() && !job.aborted.Load() {
		job.body.Abort()
		job.aborted.Store(true)
		close(job.chunks)
	}
}

// writeSnapshot stages the nodes the loop hands over, then writes the
// snapshot file around them and reports to the loop.
func (s *Server) writeSnapshot(job *snapshotJob) {
	fs := s.cfg.Storage.FS
	dir := s.cfg.Storage.snapDir()
	res := snapshotResult{nodes: 0}
	if job.staged {
		staging := filepath.Join(dir, fmt.Sprintf(".snapshot.%x.nodes.tmp", int64(job.zxid)))
		res.err = stageNodes(fs, staging, job.chunks, job.free)
		if job.aborted.Load() {
			res.err = errSnapshotAborted
		}
		if res.err == nil {
			body := &stagedBody{fs: fs, acl: job.aclSection, nodes: staging}
			res.name, res.err = snap.WriteFrom(fs, dir, job.zxid, job.sessions, body, job.digest, snap.Options{})
		}
		_ = fs.Remove(staging)
	} else {
		res.name, res.err = snap.WriteFrom(fs, dir, job.zxid, job.sessions, &streamedBody{job: job}, nil, snap.Options{})
		if res.err != nil {
			// WriteFrom can fail before it reads the body (the file's
			// create): stop a walker goroutine's walk, and wait for the
			// walk to end before the loop hears, as it may then start the
			// next snapshot's walk of the same tree. A walk on the loop has
			// ended already (a Member) or goes on to its end.
			loopStopped := job.stopWalk.Swap(true)
			for range job.chunks {
			}
			if loopStopped || (!job.offLoop && job.aborted.Load()) {
				res.err = errSnapshotAborted
			}
		}
	}
	if res.err == nil {
		res.nodes = job.body.Nodes()
	}
	s.snapshotWritten(res)
}

// stageNodes writes every chunk to a staging file and offers it back on
// free. It drains chunks even after an error, so the loop never blocks on a
// failed writer.
func stageNodes(fs vfs.FS, path string, chunks <-chan []byte, free chan<- []byte) error {
	f, err := fs.Create(path)
	var w *bufio.Writer
	if err == nil {
		w = bufio.NewWriterSize(f, 256<<10)
	}
	for chunk := range chunks {
		if err == nil {
			_, err = w.Write(chunk)
		}
		select {
		case free <- chunk:
		default:
		}
	}
	if f == nil {
		return fmt.Errorf("server: stage snapshot nodes: %w", err)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("server: stage snapshot nodes in %s: %w", path, err)
	}
	return nil
}

// streamedBody is a fuzzy snapshot body written as the walk goes: the ACL
// lists cached when it started, the nodes as the loop hands them over, the
// end marker. It drains the chunks even after an error, so the loop never
// blocks on a failed writer, and fails a Late walk.
type streamedBody struct{ job *snapshotJob }

func (b *streamedBody) WriteBody(w io.Writer) error {
	job := b.job
	_, err := w.Write(job.leading)
	for chunk := range job.chunks {
		if err == nil {
			_, err = w.Write(chunk)
		}
		select {
		case job.free <- chunk:
		default:
		}
	}
	switch {
	case err != nil:
		return err
	case job.aborted.Load():
		return errSnapshotAborted
	case job.late:
		return errLateACL
	}
	_, err = w.Write(datatree.EndMarker())
	return err
}

// Digest is the tree digest the loop took when the walk ended.
func (b *streamedBody) Digest() *snap.Digest { return b.job.digest }

// stagedBody is a fuzzy snapshot body: the ACL section, the staged nodes,
// the end marker.
type stagedBody struct {
	fs    vfs.FS
	acl   []byte
	nodes string
}

func (b *stagedBody) WriteBody(w io.Writer) error {
	if _, err := w.Write(b.acl); err != nil {
		return err
	}
	f, err := b.fs.Open(b.nodes)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return err
	}
	_, err = w.Write(datatree.EndMarker())
	return err
}

// snapshotFinished logs the outcome. A failed snapshot is not fatal: the
// log still holds every txn, and the next snapshot will be tried later.
func (s *Server) snapshotFinished(r snapshotResult) {
	job := s.snapshot
	s.snapshot = nil
	defer s.releaseHeld()
	if errors.Is(r.err, errSnapshotAborted) {
		s.log.Info("snapshot abandoned", "zxid", job.zxid)
		return
	}
	if errors.Is(r.err, errLateACL) {
		// Rare (a new ACL list while the walk ran): take a staged one at
		// the next txn applied rather than a whole snapCount later.
		s.log.Info("snapshot abandoned: a node got an ACL list newer than the walk; staging the next one", "zxid", job.zxid)
		s.stageNextSnapshot = true
		s.sinceSnapshot = math.MaxInt32
		return
	}
	if r.err != nil {
		s.log.Error("snapshot failed", "zxid", job.zxid, "err", r.err)
		return
	}
	s.stm.snapshotTaken(job.began)
	s.stm.snapshotSaved(job.zxid, time.Now())
	s.log.Info("snapshot taken", "file", r.name, "nodes", r.nodes, "staged", job.staged)
}
