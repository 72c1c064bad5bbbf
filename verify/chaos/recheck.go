package chaos

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// Recheck judges a kept run again — its history.json against the logs in
// its cluster directory — with the checks that need no live server (all
// but the tree walks and the digest samples), for instance after a
// checker was fixed. It returns the new report.
func Recheck(dir string) (*Report, error) {
	h, err := LoadHistory(filepath.Join(dir, "history.json"))
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	var upto zxid.ID
	servers, _ := filepath.Glob(filepath.Join(dir, "cluster", "s*"))
	for _, s := range servers {
		dataDir := filepath.Join(s, "data")
		last, err := lastLogged(dataDir)
		if err != nil {
			return nil, err
		}
		if last > upto {
			upto = last
		}
		dirs[filepath.Base(s)] = dataDir
	}
	c, err := ReadCommitted(dirs, upto)
	if err != nil {
		return nil, err
	}
	rep := NewReport(0)
	for _, p := range c.Problems {
		rep.Violate("history", "%s", p)
	}
	writes := resolveWrites(h, c, rep)
	CheckLinearizable(writes, "/reg/", rep)
	CheckWriteOrder(writes, rep)
	CheckReads(h, c, rep)
	CheckSessionOrder(h, rep)
	CheckSessions(h, c, rep, 0)
	CheckWatches(h, c, rep)
	return rep, nil
}

// lastLogged is the last zxid in a data directory's log.
func lastLogged(dataDir string) (zxid.ID, error) {
	if _, err := os.Stat(dataDir); err != nil {
		return 0, err
	}
	it, err := txnlog.Read(vfs.Default, dataDir, 0, txnlog.Config{})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var last zxid.ID
	for {
		t, err := it.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, txnlog.ErrTorn) {
			return last, nil
		}
		if err != nil {
			return last, err
		}
		last = max(last, t.Header.Zxid)
	}
}
