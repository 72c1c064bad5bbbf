package ledger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// cluster builds candidates from "rack:bookie,bookie;rack:bookie" ("" as
// the rack leaves the bookies without one).
func cluster(spec map[string][]BookieID, readOnly ...BookieID) Candidates {
	c := Candidates{Racks: map[BookieID]string{}, ReadOnly: readOnly}
	for rack, bs := range spec {
		for _, b := range bs {
			c.Available = append(c.Available, b)
			if rack != "" {
				c.Racks[b] = rack
			}
		}
	}
	slices.Sort(c.Available)
	return c
}

// windowRacks returns, for each write quorum of ensemble (Qw consecutive
// positions from each start, wrapping), how many racks it spans.
func windowRacks(ensemble []BookieID, writeQuorum int, c Candidates, def string) []int {
	out := make([]int, len(ensemble))
	for s := range ensemble {
		racks := map[string]bool{}
		for k := range writeQuorum {
			b := ensemble[(s+k)%len(ensemble)]
			r, ok := c.Racks[b]
			if !ok {
				r = def
			}
			racks[r] = true
		}
		out[s] = len(racks)
	}
	return out
}

func checkEnsemble(t *testing.T, what string, ens []BookieID, n int, c Candidates, exclude []BookieID) {
	t.Helper()
	if len(ens) != n || hasDuplicate(ens) {
		t.Fatalf("%s: ensemble %v: want %d distinct bookies", what, ens, n)
	}
	for _, b := range ens {
		if slices.Contains(c.ReadOnly, b) || slices.Contains(exclude, b) || !slices.Contains(c.Available, b) {
			t.Fatalf("%s: ensemble %v holds %s: read-only, excluded or unknown", what, ens, b)
		}
	}
}

func TestPolicyByClass(t *testing.T) {
	for _, tt := range []struct {
		class string
		want  PolicyKind
		ok    bool
	}{
		{RackAwareClass, RackAware, true},
		{" " + RegionAwareClass + " ", RegionAware, true},
		{RandomClass, Random, true},
		{"org.apache.bookkeeper.client.ZoneawareEnsemblePlacementPolicy", 0, false},
		{"RackawareEnsemblePlacementPolicy", 0, false},
		{"", 0, false},
	} {
		got, err := PolicyByClass(tt.class)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("PolicyByClass(%q) = %v, %v; want %v ok=%v", tt.class, got, err, tt.want, tt.ok)
		}
	}
}

// TestRackAwareQuorumCoverage checks, over many seeds, that every write
// quorum, the ones that wrap around included, spans the racks asked for
// when the racks allow it.
func TestRackAwareQuorumCoverage(t *testing.T) {
	for _, tt := range []struct {
		name           string
		racks, perRack int
		e, qw, min     int
	}{
		{"E5 Qw3 over 5 racks, 3 racks asked", 5, 2, 5, 3, 3},
		{"E6 Qw3 over 3 racks, 3 racks asked", 3, 3, 6, 3, 3},
		{"E3 Qw3 over 3 racks", 3, 1, 3, 3, 3},
		{"E5 Qw2 over 5 racks", 5, 2, 5, 2, 2},
		{"E4 Qw4 over 2 racks, default 2", 2, 4, 4, 4, 0},
		{"E6 Qw2 over 6 racks", 6, 1, 6, 2, 2},
		{"min above Qw is capped", 4, 2, 4, 2, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := map[string][]BookieID{}
			for r := range tt.racks {
				for i := range tt.perRack {
					rack := fmt.Sprintf("/r%d", r)
					spec[rack] = append(spec[rack], BookieID(fmt.Sprintf("b%d-%d:3181", r, i)))
				}
			}
			c := cluster(spec)
			p := PlacementPolicy{MinNumRacksPerWriteQuorum: tt.min}
			want := p.minRacks(tt.qw)
			for seed := range uint64(50) {
				ens, adheres, err := p.NewEnsemble(tt.e, tt.qw, c, nil, rand.New(rand.NewPCG(seed, 1)))
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				checkEnsemble(t, fmt.Sprint("seed ", seed), ens, tt.e, c, nil)
				for s, n := range windowRacks(ens, tt.qw, c, DefaultRack) {
					if n < want {
						t.Fatalf("seed %d: %v: the write quorum at %d spans %d racks, want %d", seed, ens, s, n, want)
					}
				}
				if !adheres {
					t.Fatalf("seed %d: %v covers every quorum but is reported not adhering", seed, ens)
				}
			}
		})
	}
}

func TestRackAwareNotEnoughRacks(t *testing.T) {
	oneRack := cluster(map[string][]BookieID{"/r1": {"a", "b", "c", "d"}})
	noRacks := cluster(map[string][]BookieID{"": {"a", "b", "c", "d"}})
	withDefault := cluster(map[string][]BookieID{"/r1": {"a", "b"}, "/r2": {"c"}, "": {"d", "e"}})
	for _, tt := range []struct {
		name    string
		c       Candidates
		p       PlacementPolicy
		e, qw   int
		ok      bool
		adheres bool
		anyAdh  bool // the rules do not promise an ensemble that adheres
	}{
		{"one rack, not enforced: random", oneRack, PlacementPolicy{}, 3, 2, true, false, false},
		{"no rack information, not enforced: random", noRacks, PlacementPolicy{}, 3, 3, true, false, false},
		{"one rack, enforced: refused", oneRack, PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true}, 3, 2, false, false, false},
		{"one rack, enforced, Qw 1: one rack is enough", oneRack,
			PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true}, 3, 1, true, true, false},
		{"enforced skips the default rack", withDefault,
			PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true}, 2, 2, true, true, false},
		{"enforced, too few outside the default rack", withDefault,
			PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true}, 4, 2, false, false, false},
		{"not enforced, the default rack is used", withDefault, PlacementPolicy{}, 5, 2, true, false, true},
		{"three racks asked of two, not enforced", cluster(map[string][]BookieID{"/r1": {"a", "b"}, "/r2": {"c", "d"}}),
			PlacementPolicy{MinNumRacksPerWriteQuorum: 3}, 4, 3, true, false, false},
		{"three racks asked of two, enforced", cluster(map[string][]BookieID{"/r1": {"a", "b"}, "/r2": {"c", "d"}}),
			PlacementPolicy{MinNumRacksPerWriteQuorum: 3, EnforceMinNumRacksPerWriteQuorum: true}, 4, 3, false, false, false},
		{"too few bookies", oneRack, PlacementPolicy{}, 5, 2, false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(20) {
				ens, adheres, err := tt.p.NewEnsemble(tt.e, tt.qw, tt.c, nil, rand.New(rand.NewPCG(seed, 2)))
				if !tt.ok {
					if !errors.Is(err, ErrNotEnoughBookies) {
						t.Fatalf("seed %d: %v, %v; want ErrNotEnoughBookies", seed, ens, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				checkEnsemble(t, fmt.Sprint("seed ", seed), ens, tt.e, tt.c, nil)
				if adheres != tt.adheres && !tt.anyAdh {
					t.Fatalf("seed %d: %v adheres=%v, want %v", seed, ens, adheres, tt.adheres)
				}
				if tt.p.EnforceMinNumRacksPerWriteQuorum && slices.ContainsFunc(ens, func(b BookieID) bool {
					return tt.c.Racks[b] == ""
				}) {
					t.Fatalf("seed %d: %v holds a bookie of the default rack under enforcement", seed, ens)
				}
			}
		})
	}
}

func TestRackAwareExclusions(t *testing.T) {
	c := cluster(map[string][]BookieID{"/r1": {"a", "b", "c"}, "/r2": {"d", "e", "f"}}, "b")
	exclude := []BookieID{"a", "e"}
	for seed := range uint64(30) {
		ens, _, err := PlacementPolicy{}.NewEnsemble(3, 2, c, exclude, rand.New(rand.NewPCG(seed, 3)))
		if err != nil {
			t.Fatal(err)
		}
		checkEnsemble(t, "excluded", ens, 3, c, exclude)
	}
	if _, _, err := (PlacementPolicy{}).NewEnsemble(4, 2, c, exclude, nil); !errors.Is(err, ErrNotEnoughBookies) {
		t.Fatalf("4 of 3 eligible: %v, want ErrNotEnoughBookies", err)
	}
}

func TestReplaceBookie(t *testing.T) {
	c := cluster(map[string][]BookieID{
		"/r1": {"a1", "a2"}, "/r2": {"b1", "b2"}, "/r3": {"c1"}, "/r4": {"d1"}, "": {"x1"},
	})
	for _, tt := range []struct {
		name     string
		p        PlacementPolicy
		ensemble []BookieID
		pos      int
		exclude  []BookieID
		c        Candidates
		want     []BookieID // any of these
		err      bool
	}{
		{"same rack first", PlacementPolicy{}, []BookieID{"a1", "b1", "c1"}, 0, nil, c, []BookieID{"a2"}, false},
		{"same rack excluded: a rack outside the ensemble", PlacementPolicy{},
			[]BookieID{"a1", "b1", "c1"}, 0, []BookieID{"a2"}, c, []BookieID{"d1", "x1"}, false},
		{"no same rack, no free rack: any bookie", PlacementPolicy{},
			[]BookieID{"c1", "a1", "b1", "d1"}, 0, []BookieID{"x1"}, c, []BookieID{"a2", "b2"}, false},
		{"no same rack, no free rack, enforced: refused", PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true},
			[]BookieID{"c1", "a1", "b1", "d1"}, 0, nil, c, nil, true},
		{"enforced never takes the default rack", PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true},
			[]BookieID{"a1", "b1", "c1"}, 2, []BookieID{"d1"}, c, nil, true},
		{"the lost bookie's rack is read from the candidates", PlacementPolicy{},
			[]BookieID{"b1", "c1", "d1"}, 0, nil, c, []BookieID{"b2"}, false},
		{"a lost bookie with no rack is in the default rack", PlacementPolicy{},
			[]BookieID{"gone", "a1", "b1"}, 0, nil, c, []BookieID{"x1"}, false},
		{"random ignores racks", PlacementPolicy{Kind: Random}, []BookieID{"a1", "b1", "c1"}, 0,
			[]BookieID{"a2", "b2", "d1"}, c, []BookieID{"x1"}, false},
		{"read-only is never chosen", PlacementPolicy{},
			[]BookieID{"a1", "b1", "c1"}, 0, nil,
			func() Candidates { c := c; c.ReadOnly = []BookieID{"a2"}; return c }(), []BookieID{"d1", "x1"}, false},
		{"nothing left", PlacementPolicy{}, []BookieID{"a1", "b1"}, 0,
			[]BookieID{"a2", "b2", "c1", "d1", "x1"}, c, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(20) {
				b, _, err := tt.p.ReplaceBookie(2, tt.ensemble, tt.pos, tt.c, tt.exclude, rand.New(rand.NewPCG(seed, 4)))
				if tt.err {
					if !errors.Is(err, ErrNotEnoughBookies) {
						t.Fatalf("seed %d: %s, %v; want ErrNotEnoughBookies", seed, b, err)
					}
					continue
				}
				if err != nil || !slices.Contains(tt.want, b) {
					t.Fatalf("seed %d: %s, %v; want one of %v", seed, b, err, tt.want)
				}
			}
		})
	}
	if _, _, err := (PlacementPolicy{}).ReplaceBookie(2, []BookieID{"a1"}, 1, c, nil, nil); err == nil {
		t.Error("a position outside the ensemble was accepted")
	}
}

func TestAdheres(t *testing.T) {
	c := cluster(map[string][]BookieID{"/r1": {"a1", "a2"}, "/r2": {"b1", "b2"}, "/r3": {"c1"}, "": {"x1"}})
	for _, tt := range []struct {
		p        PlacementPolicy
		ensemble []BookieID
		qw       int
		want     bool
	}{
		{PlacementPolicy{}, []BookieID{"a1", "b1", "a2", "b2"}, 2, true},
		{PlacementPolicy{}, []BookieID{"a1", "a2", "b1", "b2"}, 2, false}, // a1,a2 share r1
		{PlacementPolicy{}, []BookieID{"a1", "b1", "c1", "a2"}, 2, false}, // wraps: a2,a1
		{PlacementPolicy{}, []BookieID{"a1", "b1", "a2"}, 3, true},
		{PlacementPolicy{MinNumRacksPerWriteQuorum: 3}, []BookieID{"a1", "b1", "a2"}, 3, false},
		{PlacementPolicy{MinNumRacksPerWriteQuorum: 3}, []BookieID{"a1", "b1", "c1"}, 3, true},
		{PlacementPolicy{}, []BookieID{"a1", "x1", "b1", "c1"}, 2, true},
		{PlacementPolicy{EnforceMinNumRacksPerWriteQuorum: true}, []BookieID{"a1", "x1", "b1", "c1"}, 2, false},
		{PlacementPolicy{}, []BookieID{"a1", "gone", "b1"}, 2, false}, // an unknown bookie has no rack
		{PlacementPolicy{}, []BookieID{"a1", "a2"}, 1, true},
		{PlacementPolicy{Kind: RegionAware}, []BookieID{"a1", "a2"}, 2, true},
		{PlacementPolicy{Kind: Random}, []BookieID{"a1", "a2"}, 2, true},
		{PlacementPolicy{}, nil, 2, false},
	} {
		if got := tt.p.Adheres(tt.ensemble, tt.qw, c); got != tt.want {
			t.Errorf("%+v.Adheres(%v, Qw=%d) = %v, want %v", tt.p, tt.ensemble, tt.qw, got, tt.want)
		}
	}
}

func TestRegionAware(t *testing.T) {
	p := PlacementPolicy{Kind: RegionAware}
	c := cluster(map[string][]BookieID{
		"/east/r1": {"e1", "e2"}, "/east/r2": {"e3"}, "/west/r1": {"w1", "w2"}, "/west/r2": {"w3"}, "": {"u1"},
	})
	region := func(b BookieID) string { return regionOf(p.topology(c).loc(b)) }
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 5))
		ens, _, err := p.NewEnsemble(4, 2, c, []BookieID{"u1"}, rng)
		if err != nil {
			t.Fatal(err)
		}
		checkEnsemble(t, "region", ens, 4, c, []BookieID{"u1"})
		for i := range ens {
			if region(ens[i]) == region(ens[(i+1)%4]) {
				t.Fatalf("seed %d: %v: positions %d and %d share a region", seed, ens, i, (i+1)%4)
			}
		}
		// Within a region, the two bookies are on different racks.
		racks := map[string]int{}
		for _, b := range ens {
			racks[c.Racks[b]]++
		}
		for r, n := range racks {
			if n > 1 {
				t.Fatalf("seed %d: %v: rack %s holds %d bookies while another rack of its region has room", seed, ens, r, n)
			}
		}
		b, _, err := p.ReplaceBookie(2, ens, 0, c, nil, rng)
		if err != nil || region(b) != region(ens[0]) {
			t.Fatalf("seed %d: replacing %s gave %s (%v): want the same region", seed, ens[0], b, err)
		}
	}
	// One region: rack-aware inside it.
	one := cluster(map[string][]BookieID{"/east/r1": {"e1", "e2"}, "/east/r2": {"e3", "e4"}})
	ens, _, err := p.NewEnsemble(4, 2, one, nil, rand.New(rand.NewPCG(1, 5)))
	if err != nil {
		t.Fatal(err)
	}
	checkEnsemble(t, "one region", ens, 4, one, nil)
	// More than the regions hold.
	if _, _, err := p.NewEnsemble(8, 2, c, nil, nil); !errors.Is(err, ErrNotEnoughBookies) {
		t.Fatalf("8 of 7: %v, want ErrNotEnoughBookies", err)
	}
	// Uneven regions: the larger one takes what the smaller cannot.
	uneven := cluster(map[string][]BookieID{"/east/r1": {"e1"}, "/west/r1": {"w1", "w2"}, "/west/r2": {"w3", "w4"}})
	ens, _, err = p.NewEnsemble(5, 3, uneven, nil, rand.New(rand.NewPCG(2, 5)))
	if err != nil {
		t.Fatal(err)
	}
	checkEnsemble(t, "uneven", ens, 5, uneven, nil)
}

func TestShareOut(t *testing.T) {
	by := map[string][]BookieID{"a": make([]BookieID, 1), "b": make([]BookieID, 5), "c": make([]BookieID, 2)}
	for _, tt := range []struct {
		n    int
		want []int
	}{
		{3, []int{1, 1, 1}}, {6, []int{1, 3, 2}}, {8, []int{1, 5, 2}}, {9, []int{1, 5, 2}}, {4, []int{1, 2, 1}},
	} {
		if got := shareOut(tt.n, []string{"a", "b", "c"}, by); !slices.Equal(got, tt.want) {
			t.Errorf("shareOut(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// TestPlacementProperties draws random topologies and checks, for every
// policy, what must always hold: the same seed gives the same ensemble;
// an ensemble has E distinct eligible bookies; without enforcement enough
// eligible bookies always give one; an enforced rack-aware ensemble always
// spans its racks and never uses the default rack; a replacement is
// eligible and outside the ensemble.
func TestPlacementProperties(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 6))
		spec := map[string][]BookieID{}
		n := 1 + rng.IntN(12)
		for i := range n {
			rack := ""
			if k := rng.IntN(5); k > 0 {
				rack = fmt.Sprintf("/reg%d/rack%d", k%2, k)
			}
			spec[rack] = append(spec[rack], BookieID(fmt.Sprintf("10.0.0.%d:3181", i)))
		}
		c := cluster(spec)
		if rng.IntN(3) == 0 {
			c.ReadOnly = []BookieID{c.Available[rng.IntN(len(c.Available))]}
		}
		var exclude []BookieID
		if rng.IntN(3) == 0 {
			exclude = []BookieID{c.Available[rng.IntN(len(c.Available))]}
		}
		e := 1 + rng.IntN(5)
		qw := 1 + rng.IntN(e)
		p := PlacementPolicy{Kind: PolicyKind(rng.IntN(3)), MinNumRacksPerWriteQuorum: rng.IntN(4),
			EnforceMinNumRacksPerWriteQuorum: rng.IntN(2) == 0}
		eligible := 0
		for _, b := range c.Available {
			if !slices.Contains(c.ReadOnly, b) && !slices.Contains(exclude, b) {
				eligible++
			}
		}
		what := fmt.Sprintf("seed %d: %+v E=%d Qw=%d over %v", seed, p, e, qw, spec)
		ens, adheres, err := p.NewEnsemble(e, qw, c, exclude, rand.New(rand.NewPCG(seed, 7)))
		again, _, _ := p.NewEnsemble(e, qw, c, exclude, rand.New(rand.NewPCG(seed, 7)))
		if !slices.Equal(ens, again) {
			t.Fatalf("%s: two runs differ: %v, %v", what, ens, again)
		}
		if err != nil {
			if !errors.Is(err, ErrNotEnoughBookies) {
				t.Fatalf("%s: %v", what, err)
			}
			if eligible >= e && (!p.EnforceMinNumRacksPerWriteQuorum || p.Kind == Random) {
				t.Fatalf("%s: %d eligible for E=%d but %v", what, eligible, e, err)
			}
			continue
		}
		checkEnsemble(t, what, ens, e, c, exclude)
		if adheres != p.Adheres(ens, qw, c) {
			t.Fatalf("%s: %v reported adheres=%v", what, ens, adheres)
		}
		if p.Kind == RackAware && p.EnforceMinNumRacksPerWriteQuorum {
			for s, got := range windowRacks(ens, qw, c, DefaultRack) {
				if got < p.minRacks(qw) && p.minRacks(qw) > 1 {
					t.Fatalf("%s: %v: quorum at %d spans %d racks under enforcement", what, ens, s, got)
				}
			}
			if slices.ContainsFunc(ens, func(b BookieID) bool { return c.Racks[b] == "" }) {
				t.Fatalf("%s: %v uses the default rack under enforcement", what, ens)
			}
		}
		pos := rng.IntN(e)
		b, _, err := p.ReplaceBookie(qw, ens, pos, c, exclude, rand.New(rand.NewPCG(seed, 8)))
		if err == nil {
			checkEnsemble(t, what+" replacement", []BookieID{b}, 1, c, append(slices.Clone(exclude), ens...))
		} else if !errors.Is(err, ErrNotEnoughBookies) {
			t.Fatalf("%s: replace: %v", what, err)
		}
	}
}

func TestParseRackInfo(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want map[BookieID]string
		err  bool
	}{
		{"pulsar's layout", `{"default":{"10.0.0.1:3181":{"rack":"/rack1","hostname":"bk1"},"10.0.0.2:3181":{"rack":"rack2"}}}`,
			map[BookieID]string{"10.0.0.1:3181": "/rack1", "10.0.0.2:3181": "/rack2"}, false},
		{"region/rack", `{"g":{"b:1":{"rack":"dc1/r1"}}}`, map[BookieID]string{"b:1": "/dc1/r1"}, false},
		{"empty and slash racks are unknown", `{"g":{"a:1":{"rack":""},"b:1":{"rack":" / "},"c:1":{"hostname":"h"}}}`,
			map[BookieID]string{}, false},
		{"first group in sorted order wins", `{"z":{"a:1":{"rack":"/z"}},"a":{"a:1":{"rack":"/a"}}}`,
			map[BookieID]string{"a:1": "/a"}, false},
		{"unknown fields are ignored", `{"g":{"a:1":{"rack":"/r","extra":5}}}`, map[BookieID]string{"a:1": "/r"}, false},
		{"empty object", `{}`, map[BookieID]string{}, false},
		{"not an object", `[1]`, nil, true},
		{"rack not a string", `{"g":{"a:1":{"rack":5}}}`, nil, true},
		{"trailing data", `{} {}`, nil, true},
		{"truncated", `{"g":{`, nil, true},
	} {
		got, err := ParseRackInfo([]byte(tt.in))
		if (err != nil) != tt.err {
			t.Errorf("%s: err %v, want error %v", tt.name, err, tt.err)
			continue
		}
		if !tt.err && !mapsEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func mapsEqual(a, b map[BookieID]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestParseStaticRacks(t *testing.T) {
	got, err := ParseStaticRacks("# racks\n10.0.0.1:3181 /dc1/r1\n10.0.0.2:3181=r2\n\n")
	if err != nil || !mapsEqual(got, map[BookieID]string{"10.0.0.1:3181": "/dc1/r1", "10.0.0.2:3181": "/r2"}) {
		t.Fatalf("%v, %v", got, err)
	}
	for _, bad := range []string{"a:1", "a:1 /r /s", "a:1 /r\na:1 /s", "bad/id /r", "a:1 /"} {
		if _, err := ParseStaticRacks(bad); err == nil {
			t.Errorf("ParseStaticRacks(%q) accepted", bad)
		}
	}
}

func TestRegionOf(t *testing.T) {
	for in, want := range map[string]string{
		"/dc1/r1": "dc1", "/dc1": "dc1", DefaultRegionRack: UnknownRegion, "/": UnknownRegion, "": UnknownRegion,
	} {
		if got := regionOf(in); got != want {
			t.Errorf("regionOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReplaceBookies checks the writer's replacement of several positions:
// without racks it draws exactly what ChooseBookies draws (so seeded runs
// keep their placements), with racks each position gets its own rack's
// spare.
func TestReplaceBookies(t *testing.T) {
	flat := cluster(map[string][]BookieID{"": {"a", "b", "c", "d", "e", "f"}})
	ens := []BookieID{"a", "b", "c"}
	for seed := range uint64(20) {
		got, _, err := PlacementPolicy{}.ReplaceBookies(2, ens, []int{0, 2}, flat, []BookieID{"d"}, rand.New(rand.NewPCG(seed, 9)))
		if err != nil {
			t.Fatal(err)
		}
		want, err := ChooseBookies(2, flat, []BookieID{"a", "b", "c", "d"}, rand.New(rand.NewPCG(seed, 9)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []BookieID{want[0], "b", want[1]}) {
			t.Fatalf("seed %d: %v, want %v at positions 0 and 2", seed, got, want)
		}
	}
	racked := cluster(map[string][]BookieID{"/r1": {"a1", "a2"}, "/r2": {"b1", "b2"}, "/r3": {"c1", "c2"}})
	for seed := range uint64(20) {
		got, adheres, err := PlacementPolicy{}.ReplaceBookies(2, []BookieID{"a1", "b1", "c1"}, []int{0, 2}, racked, nil,
			rand.New(rand.NewPCG(seed, 9)))
		if err != nil || !slices.Equal(got, []BookieID{"a2", "b1", "c2"}) || !adheres {
			t.Fatalf("seed %d: %v adheres=%v %v; want [a2 b1 c2]", seed, got, adheres, err)
		}
	}
}
