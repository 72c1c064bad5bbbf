package server

import (
	"fmt"

	"keeper/internal/vfs"
)

// lockDirs takes the exclusive lock of the data directories before Start
// reads or writes anything in them (vfs.LockDirs: the file
// vfs.LockFileName in DataDir, and in DataLogDir when that is another
// directory, recording this process's pid and command line). A second
// server on either directory, in this process or another, then refuses to
// start with an error naming the directory and the holder's pid, instead
// of appending to the log the first one appends to. Close releases the
// lock; a server without storage takes none.
func (s *Server) lockDirs() error {
	st := &s.cfg.Storage
	if !st.enabled() {
		return nil
	}
	l, err := vfs.LockDirs(st.FS, st.DataDir, st.logDir())
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.dirLock = l
	return nil
}

// unlockDirs releases the lock lockDirs took, if any.
func (s *Server) unlockDirs() error {
	err := s.dirLock.Close()
	s.dirLock = nil
	return err
}

// abortStart undoes a Start that failed after lockDirs: it closes what
// recovery opened (the log, an ensemble member's transport and log) and
// only then releases the lock, so that no file of the directories is open
// here once another process may take them.
func (s *Server) abortStart() {
	_ = s.closeStorage() // Start's error is the one to report
	if s.quorum != nil {
		_ = s.stopQuorum()
	}
	_ = s.unlockDirs()
}
