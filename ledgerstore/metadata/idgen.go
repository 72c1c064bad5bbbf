package metadata

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"keeper/coordination/zkproto"
)

// ErrLedgerIDsExhausted means every high-order bucket of the long id
// generator is used up: 2^31 buckets of 2^31-1 ids.
var ErrLedgerIDsExhausted = errors.New("metadata: ledger id space exhausted")

// errSequenceOverflow means a sequential znode's number reached 2^31-1 (or
// wrapped negative), the end of one generator bucket.
var errSequenceOverflow = errors.New("metadata: sequence number overflow")

// hobPrefix names the long generator's high-order-bits directories,
// HOB-<high 32 bits as ten digits>.
const hobPrefix = "HOB-"

// keepHOBs is how many of the highest HOB directories NewLedgerID keeps;
// older, empty ones are deleted. BookKeeper keeps three so that a client
// working from a stale listing still finds its directory.
const keepHOBs = 3

// maxHOBAttempts bounds one NewLedgerID's passes over the HOB directories:
// the first may find none or a full one, the next uses a fresh one, and a
// third covers a race with another client moving on.
const maxHOBAttempts = 4

// NewLedgerID mints a cluster-unique ledger id the way BookKeeper's
// hierarchical ledger managers do (docs/bookkeeper-protocol.md §5.4), so Java clients sharing the
// tree never mint the same id:
//
//   - Until root/idgen-long exists, the id is the sequence number ZooKeeper
//     gives a new EPHEMERAL_SEQUENTIAL root/idgen/ID- znode, which is
//     deleted at once: ids count up from 0.
//   - When that number reaches 2^31-1, the generator creates
//     root/idgen-long and from then on mints (hi << 32) | seq, where hi is
//     the highest root/idgen-long/HOB-<hi> directory (starting at 1) and seq
//     the sequence number of an EPHEMERAL_SEQUENTIAL znode ID- inside it.
//     A full directory makes it create HOB-<hi+1>.
//
// Ids are unique, and increase as long as one generation mode lasts.
func (s *Store) NewLedgerID(ctx context.Context) (int64, error) {
	long, err := s.longIDsStarted(ctx)
	if err != nil {
		return 0, fmt.Errorf("metadata: new ledger id: %w", err)
	}
	if !long {
		id, err := s.sequence(ctx, s.root+"/"+idGenNode+"/"+idGenPrefix)
		if !errors.Is(err, errSequenceOverflow) {
			if err != nil {
				return 0, fmt.Errorf("metadata: new ledger id: %w", err)
			}
			return id, nil
		}
		s.log.Info("short ledger ids exhausted; minting long ids", "root", s.root)
		if _, err := s.createFullPath(ctx, s.root+"/"+idGenLongNode, nil, 0); err != nil &&
			!errors.Is(err, zkproto.ErrNodeExists) {
			return 0, fmt.Errorf("metadata: new ledger id: %w", err)
		}
		s.longIDsMu.Lock()
		s.longIDs = idGenLong
		s.longIDsMu.Unlock()
	}
	id, err := s.longID(ctx)
	if err != nil {
		return 0, fmt.Errorf("metadata: new ledger id: %w", err)
	}
	return id, nil
}

// The generator modes longIDs caches, as BookKeeper caches them: once a
// client has seen which mode the cluster is in, it stays there until its
// own short sequence overflows.
const (
	idGenUnknown = iota
	idGenShort
	idGenLong
)

// longIDsStarted reports whether the cluster mints long ids, checking for
// root/idgen-long once.
func (s *Store) longIDsStarted(ctx context.Context) (bool, error) {
	s.longIDsMu.Lock()
	mode := s.longIDs
	s.longIDsMu.Unlock()
	if mode != idGenUnknown {
		return mode == idGenLong, nil
	}
	_, exists, err := s.conn.Exists(ctx, s.root+"/"+idGenLongNode)
	if err != nil {
		return false, err
	}
	s.longIDsMu.Lock()
	defer s.longIDsMu.Unlock()
	if s.longIDs == idGenUnknown {
		s.longIDs = idGenShort
		if exists {
			s.longIDs = idGenLong
		}
	}
	return s.longIDs == idGenLong, nil
}

// sequence creates an EPHEMERAL_SEQUENTIAL znode at prefix (creating its
// parents), deletes it again, and returns its sequence number; a number
// outside [0, 2^31-1) is errSequenceOverflow.
func (s *Store) sequence(ctx context.Context, prefix string) (int64, error) {
	name, err := s.createFullPath(ctx, prefix, nil, zkproto.FlagEphemeralSequential)
	if err != nil {
		return 0, err
	}
	// The znode only carried the number. It is ephemeral, so one that
	// fails to go now goes with the session.
	if err := s.conn.Delete(ctx, name, -1); err != nil {
		s.log.Warn("could not delete an id generation znode", "znode", name, "err", err)
	}
	return parseSequence(name, prefix)
}

// parseSequence extracts the sequence number ZooKeeper appended to prefix.
func parseSequence(name, prefix string) (int64, error) {
	digits, ok := strings.CutPrefix(name, prefix)
	seq, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("sequential znode %s does not extend %s", name, prefix)
	}
	if seq < 0 || seq >= maxShortID {
		return 0, errSequenceOverflow
	}
	return seq, nil
}

// longID mints an id in the long mode.
func (s *Store) longID(ctx context.Context) (int64, error) {
	dir := s.root + "/" + idGenLongNode
	for range maxHOBAttempts {
		names, _, err := s.conn.Children(ctx, dir)
		if err != nil {
			return 0, err
		}
		hobs := parseHOBs(names)
		hi := int64(1) // the first bucket; 0 would repeat the short ids
		if len(hobs) > 0 {
			hi = hobs[len(hobs)-1]
			low, err := s.sequence(ctx, hobPath(dir, hi)+"/"+idGenPrefix)
			if err == nil {
				s.pruneHOBs(ctx, dir, hobs)
				return hi<<32 | low, nil
			}
			if !errors.Is(err, errSequenceOverflow) {
				return 0, err
			}
			hi++
		}
		if hi > math.MaxInt32 {
			return 0, ErrLedgerIDsExhausted
		}
		if err := s.createIfAbsent(ctx, hobPath(dir, hi), nil); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("no usable %s directory under %s after %d attempts", hobPrefix, dir, maxHOBAttempts)
}

func hobPath(dir string, hi int64) string { return fmt.Sprintf("%s/%s%010d", dir, hobPrefix, hi) }

// parseHOBs returns the high-order bits the HOB directories name, sorted,
// skipping any other child.
func parseHOBs(names []string) []int64 {
	var hobs []int64
	for _, name := range names {
		digits, ok := strings.CutPrefix(name, hobPrefix)
		if hi, err := strconv.ParseInt(digits, 10, 64); ok && err == nil && hi >= 0 && hi <= math.MaxInt32 {
			hobs = append(hobs, hi)
		}
	}
	slices.Sort(hobs)
	return hobs
}

// pruneHOBs deletes all but the keepHOBs highest HOB directories, best
// effort: one still holding an ID- znode is not empty and stays.
func (s *Store) pruneHOBs(ctx context.Context, dir string, hobs []int64) {
	for _, hi := range hobs[:max(0, len(hobs)-keepHOBs)] {
		p := hobPath(dir, hi)
		if err := s.conn.Delete(ctx, p, 0); err != nil {
			s.log.Debug("could not delete an old id generation directory", "znode", p, "err", err)
		}
	}
}
