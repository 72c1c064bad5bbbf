package ledger

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// coverage tracks, while an ensemble is chosen position by position, the
// racks of each write quorum (the window of Qw consecutive positions
// starting at each position, wrapping around), and says whether a
// candidate for the next position keeps every window through it able to
// reach minRacks racks.
type coverage struct {
	ensembleSize, writeQuorum, minRacks int
	loc                                 func(BookieID) string
	chosen                              []BookieID
	windows                             []window // by start position
}

type window struct {
	racks map[string]bool
	seen  int
}

func newCoverage(ensembleSize, writeQuorum, minRacks int, loc func(BookieID) string) *coverage {
	return &coverage{ensembleSize: ensembleSize, writeQuorum: writeQuorum, minRacks: minRacks, loc: loc,
		windows: make([]window, ensembleSize)}
}

// starts returns the windows the next position belongs to.
func (c *coverage) starts() []int {
	pos := len(c.chosen)
	out := make([]int, 0, c.writeQuorum)
	for i := pos - c.writeQuorum + 1; i <= pos; i++ {
		out = append(out, (i+c.ensembleSize)%c.ensembleSize)
	}
	return out
}

// fits reports whether b may take the next position: it is not chosen
// yet, and in each window through the position either the racks are
// reached with b or enough positions are left to reach them. The first
// Qw − minRacks + 1 bookies of a window may share a rack.
func (c *coverage) fits(b BookieID) bool {
	if slices.Contains(c.chosen, b) {
		return false
	}
	if c.writeQuorum < 2 {
		return true
	}
	rack := c.loc(b)
	for _, s := range c.starts() {
		w := c.windows[s]
		if w.seen+c.minRacks-1 < c.writeQuorum {
			continue
		}
		n := len(w.racks)
		if !w.racks[rack] {
			n++
		}
		if n < c.minRacks && c.writeQuorum-w.seen-1 < c.minRacks-n {
			return false
		}
	}
	return true
}

// add puts b at the next position.
func (c *coverage) add(b BookieID) {
	for _, s := range c.starts() {
		w := &c.windows[s]
		if w.racks == nil {
			w.racks = map[string]bool{}
		}
		w.racks[c.loc(b)] = true
		w.seen++
	}
	c.chosen = append(c.chosen, b)
}

// newRegionEnsemble is the region-aware choice. The regions are those of
// the writable bookies outside the exclusions. With one region it is the
// rack-aware choice inside it. With more, the E positions are shared out
// as evenly as the regions' bookies allow (starting from a random region),
// each region's bookies are taken from its racks in turn, and the
// ensemble interleaves the regions (one bookie of each in turn), so that
// consecutive positions, and hence each write quorum, span as many
// regions as there are.
func (p PlacementPolicy) newRegionEnsemble(t topology, ensembleSize, writeQuorum int, c Candidates,
	exclude []BookieID, rng *rand.Rand) ([]BookieID, bool, error) {
	excl := p.exclusions(t, exclude)
	byRegion := map[string][]BookieID{}
	for _, b := range t.writable {
		if !excl[b] {
			r := regionOf(t.loc(b))
			byRegion[r] = append(byRegion[r], b)
		}
	}
	regions := make([]string, 0, len(byRegion))
	for r := range byRegion {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	if len(regions) < 2 {
		inRegion := c
		if len(regions) == 1 {
			inRegion.Available = byRegion[regions[0]]
		}
		return p.newRackEnsemble(p.topology(inRegion), ensembleSize, writeQuorum, inRegion, exclude, rng)
	}
	if rng != nil {
		first := rng.IntN(len(regions))
		regions = append(regions[first:], regions[:first]...)
	}
	counts := shareOut(ensembleSize, regions, byRegion)
	total := 0
	for _, n := range counts {
		total += n
	}
	if total < ensembleSize {
		return nil, false, fmt.Errorf("%w: need %d, %d writable and not excluded over %d regions",
			ErrNotEnoughBookies, ensembleSize, total, len(regions))
	}
	picked := make([][]BookieID, len(regions))
	for i, r := range regions {
		picked[i] = spreadOverRacks(t, byRegion[r], counts[i], rng)
	}
	ensemble := make([]BookieID, 0, ensembleSize)
	for len(ensemble) < ensembleSize {
		for i := range picked {
			if len(picked[i]) > 0 {
				ensemble = append(ensemble, picked[i][0])
				picked[i] = picked[i][1:]
			}
		}
	}
	return ensemble, p.Adheres(ensemble, writeQuorum, c), nil
}

// shareOut divides n positions over regions, in order: each region in
// turn takes its share of what is left (rounded up), no more than it has
// bookies, and what a full region cannot take goes round again to the
// others.
func shareOut(n int, regions []string, byRegion map[string][]BookieID) []int {
	counts := make([]int, len(regions))
	left := n
	for left > 0 {
		open := 0
		for i, r := range regions {
			if counts[i] < len(byRegion[r]) {
				open++
			}
		}
		if open == 0 {
			break
		}
		for i, r := range regions {
			if left == 0 || counts[i] >= len(byRegion[r]) {
				continue
			}
			share := min((left+open-1)/open, len(byRegion[r])-counts[i])
			counts[i] += share
			left -= share
			open--
		}
	}
	return counts
}

// spreadOverRacks takes n of pool (which has at least n), a random bookie
// of a rack not yet used each time until every rack is, then round again.
func spreadOverRacks(t topology, pool []BookieID, n int, rng *rand.Rand) []BookieID {
	var out []BookieID
	used := map[string]bool{}
	taken := map[BookieID]bool{}
	for len(out) < n {
		b, ok := t.pick(rng, func(b BookieID) bool {
			return slices.Contains(pool, b) && !taken[b] && !used[t.loc(b)]
		})
		if !ok {
			if len(used) == 0 {
				break // pool is short: the caller's share said otherwise
			}
			clear(used)
			continue
		}
		out = append(out, b)
		taken[b] = true
		used[t.loc(b)] = true
	}
	return out
}
