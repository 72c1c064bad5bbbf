package entrystore

// DirUsage is the filesystem usage of one ledger directory.
type DirUsage struct {
	Dir        string
	UsedBytes  uint64
	TotalBytes uint64
}

// Fraction is UsedBytes / TotalBytes: what BookKeeper compares with
// diskUsageThreshold (0.95) to decide that a directory is full. A
// filesystem of unknown size counts as full.
func (u DirUsage) Fraction() float64 {
	if u.TotalBytes == 0 {
		return 1
	}
	return float64(u.UsedBytes) / float64(u.TotalBytes)
}

// Usage reports the filesystem usage of each ledger directory, in
// Config.Dirs order. The bookie switches to read-only when every directory
// is above its threshold (docs/bookkeeper-protocol.md §8.1) and suspends major compaction above
// the warning threshold; those decisions, and the clock that drives them,
// are the caller's.
func (s *Store) Usage() ([]DirUsage, error) {
	out := make([]DirUsage, 0, len(s.cfg.Dirs))
	for _, d := range s.cfg.Dirs {
		u, err := s.cfg.DiskUsage(d)
		if err != nil {
			return nil, err
		}
		u.Dir = d
		out = append(out, u)
	}
	return out, nil
}
