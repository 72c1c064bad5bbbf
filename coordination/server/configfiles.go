package server

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"keeper/coordination/zab"
	"keeper/coordination/zoocfg"
	"keeper/internal/vfs"
)

// ConfigFiles writes the files Apache ZooKeeper writes beside its static
// configuration file as the ensemble's configuration changes
// (docs/configuration.md, Dynamic configuration files): the configuration
// last seen proposed in <static>.dynamic.next, the active one in
// <static>.dynamic.<hex version>, and the static file rewritten to point
// at it. Every file is replaced atomically (temp file, fsync, rename,
// fsync the directory), and in an order that leaves a configuration a
// restart can load whenever a crash comes: the dynamic file before the
// static file that names it, the next file removed last. A next file
// left by a crash after the static file was rewritten has a version no
// newer than the active one and is ignored at start.
type ConfigFiles struct {
	// FS holds the files; Static is the static file's canonical path.
	FS     vfs.FS
	Static string
	// MyID is this server's id: when its line in the active
	// configuration has a client address, the static file's clientPort
	// keys go (ZooKeeper's eraseClientPortAddress).
	MyID int64

	written int64 // version of the active configuration on disk
}

// SaveConfig makes the configurations durable as ZooKeeper's files (it
// is a peer.ConfigStore); it writes the active one only when its version
// is newer than the last written.
func (c *ConfigFiles) SaveConfig(cs zab.ConfigState) error {
	next := c.Static + zoocfg.NextDynamicSuffix
	if cs.Next != nil {
		e, err := parseText(cs.Next.Text)
		if err != nil {
			return err
		}
		if err := c.replace(next, e.DynamicFileData(true)); err != nil {
			return err
		}
	}
	if v := int64(cs.Active.Version); v > c.written && len(cs.Active.Text) > 0 {
		e, err := parseText(cs.Active.Text)
		if err != nil {
			return err
		}
		dyn := zoocfg.DynamicFilename(c.Static, v)
		if err := c.replace(dyn, e.DynamicFileData(false)); err != nil {
			return err
		}
		static, err := vfs.ReadFile(c.FS, c.Static)
		if err != nil {
			return fmt.Errorf("server: read %s: %w", c.Static, err)
		}
		erase := false
		for _, s := range e.Servers {
			if s.ID == c.MyID && s.ClientPort != 0 {
				erase = true
			}
		}
		edited, err := zoocfg.EditStatic(static, dyn, erase)
		if err != nil {
			return fmt.Errorf("server: %s: %w", c.Static, err)
		}
		if err := c.replace(c.Static, edited); err != nil {
			return err
		}
		c.written = v
	}
	if cs.Next == nil {
		switch err := c.FS.Remove(next); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("server: remove %s: %w", next, err)
		default:
			return c.FS.SyncDir(filepath.Dir(next))
		}
	}
	return nil
}

// Backup copies the static file to <static>.bak, as ZooKeeper does when
// it starts a member of an ensemble with reconfigEnabled whose servers
// are still in the static file (before it first rewrites that file); the
// copy is never read back.
func (c *ConfigFiles) Backup() error {
	data, err := vfs.ReadFile(c.FS, c.Static)
	if err != nil {
		return fmt.Errorf("server: read %s: %w", c.Static, err)
	}
	return c.replace(c.Static+".bak", data)
}

// replace writes data to path atomically.
func (c *ConfigFiles) replace(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp := path + ".tmp"
	f, err := c.FS.Create(tmp)
	if err != nil {
		return fmt.Errorf("server: create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("server: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("server: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("server: close %s: %w", tmp, err)
	}
	if err := c.FS.Rename(tmp, path); err != nil {
		return fmt.Errorf("server: rename %s: %w", tmp, err)
	}
	return c.FS.SyncDir(dir)
}

func parseText(text []byte) (*zoocfg.Ensemble, error) {
	e, err := zoocfg.ParseNextDynamic(text, "configuration")
	if err != nil {
		return nil, fmt.Errorf("server: configuration to write: %w", err)
	}
	return e, nil
}
