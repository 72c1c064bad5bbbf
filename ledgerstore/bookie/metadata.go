package bookie

import (
	"context"
	"errors"
	"fmt"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// metadataOpTimeout bounds a registration move and unregistering at
// shutdown, so that a metadata service that stopped answering cannot hang
// a disk check or a shutdown. (A GC pass ends with the bookie instead.)
const metadataOpTimeout = 30 * time.Second

// openMetadata connects to the metadata store, creates the ledgers tree
// if the cluster is new (metadata.Store.Init, as `bookkeeper shell
// metaformat` would), and checks (or stamps) the cookies. The store is
// opened with the layout the tree's LAYOUT names, so that garbage
// collection walks the tree the cluster uses.
func (b *Bookie) openMetadata(ctx context.Context) error {
	sess, err := metadata.Dial(ctx, metadata.DialConfig{
		Servers: b.cfg.MetadataServers, SessionTimeout: b.cfg.ZKSessionTimeout, Logger: b.log,
		Security: b.cfg.MetadataSecurity,
	})
	if err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	b.mdSession = sess
	if b.md, err = sess.OpenTree(ctx, metadata.Config{Root: b.cfg.LedgersRoot, Logger: b.log}); err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	instanceID, err := b.md.InstanceID(ctx)
	if err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	if instanceID == "" {
		b.log.Warn("the ledgers tree has no INSTANCEID; cookies will not name a cluster", "root", b.md.Root())
	}
	master := masterCookie(b.cfg, b.id, instanceID)
	return checkCookies(b.cfg.FS, cookieDirs(b.cfg), metaCookies{ctx, b.md, ledger.BookieID(b.id)}, master)
}

// register publishes the bookie in the registry, in the mode updateMode
// last applied. From here on updateMode moves the registration.
func (b *Bookie) register(ctx context.Context) error {
	data, err := metadata.RegistrationData(b.advAddr, b.advertisedMetricsAddr())
	if err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	b.modeMu.Lock()
	reg, err := b.md.NewRegistration(metadata.RegistrationConfig{
		ID: ledger.BookieID(b.id), Data: data, ReadOnly: b.published, StaleWait: 2 * b.cfg.ZKSessionTimeout,
	})
	if err == nil {
		b.reg = reg
	}
	b.modeMu.Unlock()
	if err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	if err := reg.Register(ctx); err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	return nil
}

// publishModeLocked moves the registration, if there is one, to the mode's
// directory. The caller holds modeMu.
func (b *Bookie) publishModeLocked(readOnly bool) {
	if b.reg == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), metadataOpTimeout)
	defer cancel()
	if err := b.reg.SetReadOnly(ctx, readOnly); err != nil {
		b.log.Error("moving the registration failed; retrying in the background", "readOnly", readOnly, "err", err)
	}
}

// closeMetadata unregisters the bookie and ends its metadata session.
func (b *Bookie) closeMetadata() error {
	b.modeMu.Lock()
	reg := b.reg
	b.modeMu.Unlock()
	var err error
	if reg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), metadataOpTimeout)
		err = reg.Close(ctx)
		cancel()
	}
	if b.md != nil {
		b.md.Close()
	}
	if b.mdSession != nil {
		b.mdSession.Close()
	}
	return err
}

// metaCookies is the metadata store's copy of the bookie's cookie, for
// checkCookies.
type metaCookies struct {
	ctx   context.Context
	store *metadata.Store
	id    ledger.BookieID
}

func (m metaCookies) readCookie() ([]byte, bool, error) {
	data, _, err := m.store.Cookie(m.ctx, m.id)
	if errors.Is(err, metadata.ErrNoCookie) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("bookie: %w", err)
	}
	return data, true, nil
}

func (m metaCookies) createCookie(data []byte) error {
	if _, err := m.store.CreateCookie(m.ctx, m.id, data); err != nil {
		return fmt.Errorf("bookie: %w", err)
	}
	return nil
}

func (m metaCookies) cookiePath() string { return m.store.CookiePath(m.id) }
