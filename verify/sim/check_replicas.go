package sim

import (
	"slices"

	"keeper/coordination/zxid"
)

// checkReplicas checks replica agreement: every replica ended with the same
// history, the final one; and every digest any replica had at a zxid of
// that history is the digest of replaying the history up to it. (Replicas
// were also compared with each other at every zxid while the run went on;
// see oracle.digest.)
func (c *Cluster) checkReplicas() {
	f := c.oracle.final
	for _, s := range c.servers[1:] {
		if !slices.Equal(s.hist, f.zxids) {
			i := firstDifference(s.hist, f.zxids)
			c.violate("agreement", "server %d's history differs from the final one at position %d: %s vs %s (lengths %d, %d)",
				s.id, i, at(s.hist, i), at(f.zxids, i), len(s.hist), len(f.zxids))
		}
		if d := s.core.Tree().Digest(); len(f.digests) > 0 && d != f.digests[len(f.digests)-1] {
			c.violate("digest", "server %d ends with digest %#x, replaying the final history gives %#x",
				s.id, d, f.digests[len(f.digests)-1])
		}
	}
	zs := make([]zxid.ID, 0, len(c.oracle.digests))
	for z := range c.oracle.digests {
		zs = append(zs, z)
	}
	slices.Sort(zs)
	for _, z := range zs {
		obs := c.oracle.digests[z]
		if i, ok := f.index[z]; ok && f.digests[i] != obs.digest {
			c.violate("digest", "server %d had digest %#x at zxid %s (t=%dms); the committed history gives %#x",
				obs.server, obs.digest, z, obs.atMs, f.digests[i])
		}
	}
}

// at returns zs[i], or 0 past the end.
func at(zs []zxid.ID, i int) zxid.ID {
	if i < len(zs) {
		return zs[i]
	}
	return 0
}
