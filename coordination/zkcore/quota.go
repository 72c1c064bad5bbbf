package zkcore

import (
	"errors"
	"fmt"

	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
)

// errQuotaData fails a write whose quota check meets a limits or stats node
// it cannot parse. Apache ZooKeeper throws a runtime exception there, which
// fails the whole request with MarshallingError, even inside a multi.
var errQuotaData = fmt.Errorf("zkcore: unreadable quota node: %w", zkproto.ErrMarshallingError)

// checkQuota is ZooKeeperServer.checkQuota: with EnforceQuota, a create
// (countDiff 1) or setData (countDiff 0) at path that would take the
// deepest quota above it past a hard limit fails with QuotaExceeded; past a
// soft limit it is logged and goes ahead. As in ZooKeeper the quota, its
// limits and its stats are read from the committed tree, not from writes
// prepared but not applied: the leader alone checks, at preparation, so
// every replica applies the same txns. A limit of -1 is no limit; only what
// the write changes is checked (a create with empty data checks no bytes).
func (p *prep) checkQuota(path string, bytesDiff, countDiff int64) error {
	if !p.s.cfg.EnforceQuota {
		return nil
	}
	tree := p.s.tree
	prefix, ok := tree.QuotaPrefix(path)
	if !ok {
		return nil
	}
	limitNode := tree.Node(datatree.QuotaLimitPath(prefix))
	if limitNode == nil {
		return nil // the quota's limits node went since the path was tracked
	}
	limits, err := datatree.ParseStatsTrack(limitNode.Data())
	if err != nil {
		p.s.log.Warn("quota limits unreadable", "quota", prefix, "path", path, "err", err)
		return errQuotaData
	}
	checkCount := countDiff != 0 && (limits.Count() > -1 || limits.CountHardLimit() > -1)
	checkBytes := bytesDiff != 0 && (limits.Bytes() > -1 || limits.ByteHardLimit() > -1)
	if !checkCount && !checkBytes {
		return nil
	}
	statNode := tree.Node(datatree.QuotaStatPath(prefix))
	if statNode == nil {
		return nil
	}
	stats, err := datatree.ParseStatsTrack(statNode.Data())
	if err != nil {
		p.s.log.Warn("quota stats unreadable", "quota", prefix, "path", path, "err", err)
		return errQuotaData
	}
	if checkCount && p.exceeds(prefix, "count", stats.Count()+countDiff, limits.Count(), limits.CountHardLimit()) {
		p.s.metrics.quota(prefix)
		return zkproto.Errorf(zkproto.CodeQuotaExceeded, prefix)
	}
	if checkBytes && p.exceeds(prefix, "bytes", stats.Bytes()+bytesDiff, limits.Bytes(), limits.ByteHardLimit()) {
		p.s.metrics.quota(prefix)
		return zkproto.Errorf(zkproto.CodeQuotaExceeded, prefix)
	}
	return nil
}

// exceeds reports whether value passes the hard limit, or, without one
// (-1), the soft limit, and logs either; only a hard limit refuses.
func (p *prep) exceeds(prefix, what string, value, soft, hard int64) (refuse bool) {
	limit, kind := soft, "soft"
	if hard > -1 {
		limit, kind = hard, "hard"
	}
	if value <= limit {
		return false
	}
	p.s.log.Warn("quota exceeded", "quota", prefix, "what", what, "value", value, "limit", kind, "max", limit)
	return kind == "hard"
}

// isQuotaData reports whether err is a quota check that failed on data it
// could not parse.
func isQuotaData(err error) bool { return errors.Is(err, errQuotaData) }
