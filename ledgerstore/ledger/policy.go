package ledger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// PolicyKind names an ensemble placement policy by what it does; the
// zero value is BookKeeper's default class, the rack-aware policy
// (docs/bookkeeper-protocol.md §8.6).
type PolicyKind uint8

// The placement policies.
const (
	// RackAware spreads every write quorum over at least
	// min(Qw, MinNumRacksPerWriteQuorum) racks where the racks allow.
	RackAware PolicyKind = iota
	// Random chooses writable bookies at random
	// (DefaultEnsemblePlacementPolicy).
	Random
	// RegionAware balances an ensemble over the regions (the first
	// component of a location), racks apart inside each region.
	RegionAware
)

// The BookKeeper class names of the policies, as ensemblePlacementPolicy
// takes them.
const (
	RackAwareClass   = "org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy"
	RandomClass      = "org.apache.bookkeeper.client.DefaultEnsemblePlacementPolicy"
	RegionAwareClass = "org.apache.bookkeeper.client.RegionAwareEnsemblePlacementPolicy"
)

// PolicyByClass returns the policy a BookKeeper class name names. Any
// other class is an error: a policy keeper does not run must not turn
// into another one silently.
func PolicyByClass(class string) (PolicyKind, error) {
	switch strings.TrimSpace(class) {
	case RackAwareClass:
		return RackAware, nil
	case RandomClass:
		return Random, nil
	case RegionAwareClass:
		return RegionAware, nil
	}
	return 0, fmt.Errorf("ledger: ensemble placement policy %q is not one keeper runs (%s, %s or %s)",
		class, RackAwareClass, RegionAwareClass, RandomClass)
}

// DefaultMinNumRacksPerWriteQuorum is minNumRacksPerWriteQuorum's default.
const DefaultMinNumRacksPerWriteQuorum = 2

// PlacementPolicy chooses ensembles and replacement bookies. Its methods
// are pure: the outcome depends only on the arguments (the candidates and
// their racks, the exclusions, and the generator's state).
type PlacementPolicy struct {
	Kind PolicyKind
	// MinNumRacksPerWriteQuorum is how many racks each write quorum should
	// span (capped at Qw); 0 means DefaultMinNumRacksPerWriteQuorum.
	MinNumRacksPerWriteQuorum int
	// EnforceMinNumRacksPerWriteQuorum refuses (ErrNotEnoughBookies) an
	// ensemble or a replacement that cannot span the racks, and never
	// chooses a bookie of the default rack.
	EnforceMinNumRacksPerWriteQuorum bool
}

// Validate checks the settings.
func (p PlacementPolicy) Validate() error {
	if p.Kind > RegionAware {
		return fmt.Errorf("ledger: unknown placement policy %d", p.Kind)
	}
	if p.MinNumRacksPerWriteQuorum < 0 {
		return fmt.Errorf("ledger: minNumRacksPerWriteQuorum %d", p.MinNumRacksPerWriteQuorum)
	}
	return nil
}

func (p PlacementPolicy) minRacks(writeQuorum int) int {
	n := p.MinNumRacksPerWriteQuorum
	if n == 0 {
		n = DefaultMinNumRacksPerWriteQuorum
	}
	return min(writeQuorum, n)
}

// DefaultLocation returns where the policy puts a bookie of unknown rack.
func (p PlacementPolicy) DefaultLocation() string {
	if p.Kind == RegionAware {
		return DefaultRegionRack
	}
	return DefaultRack
}

// topology is the policy's view of the candidates: the writable bookies,
// sorted, and each one's network location.
type topology struct {
	writable []BookieID
	loc      func(BookieID) string
}

func (p PlacementPolicy) topology(c Candidates) topology {
	pool := slices.Clone(c.Available)
	slices.Sort(pool)
	pool = slices.Compact(pool)
	pool = slices.DeleteFunc(pool, func(b BookieID) bool { return slices.Contains(c.ReadOnly, b) })
	def := p.DefaultLocation()
	return topology{writable: pool, loc: func(b BookieID) string {
		if l, ok := c.Racks[b]; ok && l != "" {
			return l
		}
		return def
	}}
}

// racks returns the distinct locations of the writable bookies.
func (t topology) racks() []string {
	var out []string
	for _, b := range t.writable {
		out = append(out, t.loc(b))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pick returns a random writable bookie that ok accepts, or false. The
// eligible bookies are taken in sorted order and shuffled with rng (nil:
// the first).
func (t topology) pick(rng *rand.Rand, ok func(BookieID) bool) (BookieID, bool) {
	var pool []BookieID
	for _, b := range t.writable {
		if ok(b) {
			pool = append(pool, b)
		}
	}
	if len(pool) == 0 {
		return "", false
	}
	if rng != nil {
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	}
	return pool[0], true
}

// exclusions returns the set of bookies never to choose: exclude, and
// with EnforceMinNumRacksPerWriteQuorum every bookie in the default rack.
func (p PlacementPolicy) exclusions(t topology, exclude []BookieID) map[BookieID]bool {
	out := make(map[BookieID]bool, len(exclude))
	for _, b := range exclude {
		out[b] = true
	}
	if p.EnforceMinNumRacksPerWriteQuorum {
		for _, b := range t.writable {
			if t.loc(b) == p.DefaultLocation() {
				out[b] = true
			}
		}
	}
	return out
}

// NewEnsemble chooses the E bookies of a new ensemble, in position order,
// from the writable candidates outside exclude. adheres reports whether
// every write quorum spans the racks the policy asks for (a caller warns
// when it does not). The error is ErrNotEnoughBookies when too few
// bookies qualify, or, with EnforceMinNumRacksPerWriteQuorum, when the
// racks cannot be spanned.
func (p PlacementPolicy) NewEnsemble(ensembleSize, writeQuorum int, c Candidates, exclude []BookieID,
	rng *rand.Rand) (ensemble []BookieID, adheres bool, err error) {
	if _, err := NewPlacement(ensembleSize, writeQuorum, 1); err != nil {
		return nil, false, err
	}
	t := p.topology(c)
	switch p.Kind {
	case Random:
		ens, err := ChooseBookies(ensembleSize, c, exclude, rng)
		return ens, err == nil, err
	case RegionAware:
		return p.newRegionEnsemble(t, ensembleSize, writeQuorum, c, exclude, rng)
	}
	return p.newRackEnsemble(t, ensembleSize, writeQuorum, c, exclude, rng)
}

// newRackEnsemble is the rack-aware choice. With fewer than two racks it
// is the random one (refused if the racks are enforced). Otherwise each
// position takes a random bookie from a rack not used since the last
// restart of the rack rotation, one that keeps every write quorum through
// it able to reach its racks; when no such rack has one, it takes any
// bookie that keeps the quorums able to (or, unless enforced, any bookie
// at all), and the rotation starts again.
func (p PlacementPolicy) newRackEnsemble(t topology, ensembleSize, writeQuorum int, c Candidates,
	exclude []BookieID, rng *rand.Rand) ([]BookieID, bool, error) {
	minRacks := p.minRacks(writeQuorum)
	if len(t.racks()) < 2 {
		if p.EnforceMinNumRacksPerWriteQuorum && minRacks > 1 {
			return nil, false, fmt.Errorf("%w: one rack, and %d racks per write quorum are enforced",
				ErrNotEnoughBookies, minRacks)
		}
		c.Available = slices.DeleteFunc(slices.Clone(c.Available), func(b BookieID) bool {
			return p.EnforceMinNumRacksPerWriteQuorum && t.loc(b) == p.DefaultLocation()
		})
		ens, err := ChooseBookies(ensembleSize, c, exclude, rng)
		return ens, err == nil && p.Adheres(ens, writeQuorum, c), err
	}
	excl := p.exclusions(t, exclude)
	cov := newCoverage(ensembleSize, writeQuorum, minRacks, t.loc)
	var usedRacks map[string]bool // nil: the whole cluster
	for i := range ensembleSize {
		if i > 0 {
			prev := t.loc(cov.chosen[i-1])
			if usedRacks == nil {
				usedRacks = map[string]bool{}
			}
			usedRacks[prev] = true
		}
		fits := func(b BookieID) bool { return !excl[b] && cov.fits(b) }
		b, ok := t.pick(rng, func(b BookieID) bool { return !usedRacks[t.loc(b)] && fits(b) })
		if !ok && usedRacks != nil {
			usedRacks = nil
			if b, ok = t.pick(rng, fits); !ok && !p.EnforceMinNumRacksPerWriteQuorum {
				b, ok = t.pick(rng, func(b BookieID) bool { return !excl[b] })
			}
		}
		if !ok {
			return nil, false, fmt.Errorf("%w: need %d, found %d over %d racks", ErrNotEnoughBookies,
				ensembleSize, i, len(t.racks()))
		}
		cov.add(b)
		excl[b] = true
	}
	return cov.chosen, p.Adheres(cov.chosen, writeQuorum, c), nil
}

// ReplaceBookie chooses a bookie for position pos of ensemble, outside
// the ensemble and exclude. The rack-aware policy takes a bookie of the
// replaced bookie's rack if one qualifies, else one of a rack the rest of
// the ensemble does not use, else (unless the racks are enforced) any;
// the region-aware one takes the same rack, else the same region, else
// any region. adheres reports whether the new ensemble meets the policy.
func (p PlacementPolicy) ReplaceBookie(writeQuorum int, ensemble []BookieID, pos int, c Candidates,
	exclude []BookieID, rng *rand.Rand) (b BookieID, adheres bool, err error) {
	if pos < 0 || pos >= len(ensemble) {
		return "", false, fmt.Errorf("ledger: replace position %d of an ensemble of %d", pos, len(ensemble))
	}
	if p.Kind == Random {
		picked, err := ChooseBookies(1, c, append(slices.Clone(exclude), ensemble...), rng)
		if err != nil {
			return "", false, err
		}
		return picked[0], true, nil
	}
	t := p.topology(c)
	excl := p.exclusions(t, append(slices.Clone(exclude), ensemble...))
	replaced := t.loc(ensemble[pos])
	otherRacks := map[string]bool{}
	for i, o := range ensemble {
		if i != pos {
			otherRacks[t.loc(o)] = true
		}
	}
	free := func(b BookieID) bool { return !excl[b] }
	b, ok := t.pick(rng, func(b BookieID) bool { return free(b) && t.loc(b) == replaced })
	switch {
	case ok:
	case p.Kind == RegionAware:
		region := regionOf(replaced)
		if b, ok = t.pick(rng, func(b BookieID) bool { return free(b) && regionOf(t.loc(b)) == region }); !ok {
			b, ok = t.pick(rng, free)
		}
	default:
		if b, ok = t.pick(rng, func(b BookieID) bool { return free(b) && !otherRacks[t.loc(b)] }); !ok &&
			!p.EnforceMinNumRacksPerWriteQuorum {
			b, ok = t.pick(rng, free)
		}
	}
	if !ok {
		return "", false, fmt.Errorf("%w: no replacement for %s", ErrNotEnoughBookies, ensemble[pos])
	}
	next := slices.Clone(ensemble)
	next[pos] = b
	return b, p.Adheres(next, writeQuorum, c), nil
}

// ReplaceBookies returns ensemble with the bookies at positions
// replaced, one position after another as ReplaceBookie chooses (each
// replacement is outside the ensemble as it stands then). When the racks
// cannot matter (the random policy, or fewer than two racks and nothing
// enforced) all are drawn at once, as ChooseBookies draws them.
func (p PlacementPolicy) ReplaceBookies(writeQuorum int, ensemble []BookieID, positions []int, c Candidates,
	exclude []BookieID, rng *rand.Rand) (next []BookieID, adheres bool, err error) {
	next = slices.Clone(ensemble)
	if p.Kind == Random || (len(p.topology(c).racks()) < 2 && !p.EnforceMinNumRacksPerWriteQuorum) {
		repl, err := ChooseBookies(len(positions), c, append(slices.Clone(ensemble), exclude...), rng)
		if err != nil {
			return nil, false, err
		}
		for i, pos := range positions {
			next[pos] = repl[i]
		}
		return next, p.Adheres(next, writeQuorum, c), nil
	}
	for _, pos := range positions {
		b, _, err := p.ReplaceBookie(writeQuorum, next, pos, c, exclude, rng)
		if err != nil {
			return nil, false, err
		}
		next[pos] = b
	}
	return next, p.Adheres(next, writeQuorum, c), nil
}

// Adheres reports whether ensemble meets the policy: for the rack-aware
// policy, every write quorum (Qw consecutive positions, wrapping around)
// spans at least min(Qw, MinNumRacksPerWriteQuorum) racks counting only
// writable candidates (others have no known rack) and, when the racks are
// enforced, holds no bookie of the default rack. The random and
// region-aware policies accept every ensemble, as BookKeeper's do.
func (p PlacementPolicy) Adheres(ensemble []BookieID, writeQuorum int, c Candidates) bool {
	if len(ensemble) == 0 {
		return false
	}
	if p.Kind != RackAware {
		return true
	}
	t := p.topology(c)
	minRacks := p.minRacks(writeQuorum)
	for start := range ensemble {
		racks := map[string]bool{}
		for k := range writeQuorum {
			b := ensemble[(start+k)%len(ensemble)]
			if _, known := slices.BinarySearch(t.writable, b); known {
				racks[t.loc(b)] = true
			}
		}
		if len(racks) < minRacks || (p.EnforceMinNumRacksPerWriteQuorum && racks[p.DefaultLocation()]) {
			return false
		}
	}
	return true
}
