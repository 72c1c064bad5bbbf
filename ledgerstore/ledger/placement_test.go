package ledger

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNewPlacement(t *testing.T) {
	tests := []struct {
		e, qw, qa int
		ok        bool
	}{
		{3, 3, 2, true}, {5, 3, 2, true}, {1, 1, 1, true}, {2, 2, 2, true},
		{3, 4, 2, false}, {3, 2, 3, false}, {3, 3, 0, false}, {0, 0, 0, false},
	}
	for _, tt := range tests {
		_, err := NewPlacement(tt.e, tt.qw, tt.qa)
		if (err == nil) != tt.ok {
			t.Errorf("NewPlacement(%d, %d, %d) = %v, want ok %v", tt.e, tt.qw, tt.qa, err, tt.ok)
		}
	}
}

func TestWriteSet(t *testing.T) {
	tests := []struct {
		e, qw int
		entry int64
		want  []int
	}{
		{3, 3, 0, []int{0, 1, 2}},
		{3, 3, 1, []int{1, 2, 0}},
		{5, 3, 0, []int{0, 1, 2}},
		{5, 3, 3, []int{3, 4, 0}},
		{5, 3, 4, []int{4, 0, 1}},
		{5, 3, 7, []int{2, 3, 4}},
		{4, 2, 1 << 40, []int{0, 1}},
		{1, 1, 9, []int{0}},
	}
	for _, tt := range tests {
		p := Placement{EnsembleSize: tt.e, WriteQuorum: tt.qw, AckQuorum: 1}
		got := p.WriteSet(tt.entry)
		if !slices.Equal(got, tt.want) {
			t.Errorf("E=%d Qw=%d WriteSet(%d) = %v, want %v", tt.e, tt.qw, tt.entry, got, tt.want)
		}
		for pos := range tt.e {
			if in := p.InWriteSet(tt.entry, pos); in != slices.Contains(tt.want, pos) {
				t.Errorf("E=%d Qw=%d InWriteSet(%d, %d) = %v", tt.e, tt.qw, tt.entry, pos, in)
			}
		}
		if p.InWriteSet(tt.entry, -1) || p.InWriteSet(tt.entry, tt.e) {
			t.Errorf("InWriteSet accepts a position outside the ensemble")
		}
	}
}

// TestWriteSetsAreRoundRobin checks that there are exactly E distinct
// write sets (one when Qw = E) and that every position serves Qw of every E consecutive
// entries (docs/bookkeeper-protocol.md §1.1).
func TestWriteSetsAreRoundRobin(t *testing.T) {
	for e := 1; e <= 6; e++ {
		for qw := 1; qw <= e; qw++ {
			p := Placement{EnsembleSize: e, WriteQuorum: qw, AckQuorum: 1}
			load := make([]int, e)
			sets := map[string]bool{}
			for entry := range int64(e) {
				ws := p.WriteSet(entry)
				s := slices.Clone(ws)
				slices.Sort(s)
				key := ""
				for _, x := range s {
					key += string(rune('a' + x))
				}
				sets[key] = true
				for _, pos := range ws {
					load[pos]++
				}
			}
			if want := map[bool]int{true: 1, false: e}[qw == e]; len(sets) != want {
				t.Errorf("E=%d Qw=%d: %d distinct write sets, want %d", e, qw, len(sets), want)
			}
			for pos, n := range load {
				if n != qw {
					t.Errorf("E=%d Qw=%d: position %d serves %d of %d entries, want %d", e, qw, pos, n, e, qw)
				}
			}
		}
	}
}

func TestCoverageQuorum(t *testing.T) {
	tests := []struct{ e, qw, qa, want int }{
		{3, 3, 2, 2}, {3, 3, 3, 1}, {3, 3, 1, 3}, {5, 3, 2, 2}, {2, 2, 2, 1},
	}
	for _, tt := range tests {
		p := Placement{EnsembleSize: tt.e, WriteQuorum: tt.qw, AckQuorum: tt.qa}
		if got := p.CoverageQuorum(); got != tt.want {
			t.Errorf("E=%d Qw=%d Qa=%d: CoverageQuorum = %d, want %d", tt.e, tt.qw, tt.qa, got, tt.want)
		}
		if p.EnoughNegatives(tt.want-1) || !p.EnoughNegatives(tt.want) {
			t.Errorf("E=%d Qw=%d Qa=%d: EnoughNegatives threshold is not %d", tt.e, tt.qw, tt.qa, tt.want)
		}
	}
}

func TestEnsembleCovered(t *testing.T) {
	T, F := true, false
	tests := []struct {
		name      string
		e, qw, qa int
		def       []bool
		want      bool
	}{
		{"3/3/2 two answers", 3, 3, 2, []bool{T, T, F}, true},
		{"3/3/2 one answer", 3, 3, 2, []bool{F, T, F}, false},
		{"3/3/3 one answer", 3, 3, 3, []bool{F, F, T}, true},
		{"3/3/1 needs all", 3, 3, 1, []bool{T, T, F}, false},
		{"5/3/2 one gap", 5, 3, 2, []bool{T, T, F, T, T}, true},
		{"5/3/2 alternate", 5, 3, 2, []bool{T, F, T, F, T}, false},
		{"5/3/2 adjacent gap", 5, 3, 2, []bool{T, F, F, T, T}, false},
		{"5/3/2 gap wraps", 5, 3, 2, []bool{F, T, T, T, F}, false},
		{"4/2/2 every other", 4, 2, 2, []bool{T, F, T, F}, true},
		{"4/2/2 none", 4, 2, 2, []bool{F, F, F, F}, false},
		{"wrong length", 3, 3, 2, []bool{T, T}, false},
	}
	for _, tt := range tests {
		p := Placement{EnsembleSize: tt.e, WriteQuorum: tt.qw, AckQuorum: tt.qa}
		if got := p.EnsembleCovered(tt.def); got != tt.want {
			t.Errorf("%s: EnsembleCovered(%v) = %v, want %v", tt.name, tt.def, got, tt.want)
		}
	}
}

// TestEnsembleCoveredMeansNoHiddenQuorum checks the definition by brute
// force: coverage holds exactly when no write set has Qa members whose
// answer is unknown.
func TestEnsembleCoveredMeansNoHiddenQuorum(t *testing.T) {
	for e := 1; e <= 6; e++ {
		for qw := 1; qw <= e; qw++ {
			for qa := 1; qa <= qw; qa++ {
				p := Placement{EnsembleSize: e, WriteQuorum: qw, AckQuorum: qa}
				for mask := range 1 << e {
					def := make([]bool, e)
					for i := range e {
						def[i] = mask&(1<<i) != 0
					}
					want := true
					for entry := range int64(e) {
						unknown := 0
						for _, pos := range p.WriteSet(entry) {
							if !def[pos] {
								unknown++
							}
						}
						if unknown >= qa {
							want = false
						}
					}
					if got := p.EnsembleCovered(def); got != want {
						t.Fatalf("E=%d Qw=%d Qa=%d %v: covered %v, want %v", e, qw, qa, def, got, want)
					}
				}
			}
		}
	}
}

func TestChooseBookies(t *testing.T) {
	c := Candidates{Available: []BookieID{"e", "a", "d", "c", "b", "a"}, ReadOnly: []BookieID{"c"}}
	got, err := ChooseBookies(2, c, []BookieID{"a"}, nil)
	if err != nil || !slices.Equal(got, []BookieID{"b", "d"}) {
		t.Fatalf("ChooseBookies without rng = %v, %v; want [b d]", got, err)
	}
	if _, err := ChooseBookies(4, c, []BookieID{"a"}, nil); !errors.Is(err, ErrNotEnoughBookies) {
		t.Fatalf("ChooseBookies(4) error = %v, want ErrNotEnoughBookies", err)
	}
	for seed := range uint64(50) {
		a, _ := ChooseBookies(3, c, nil, rand.New(rand.NewPCG(seed, 1)))
		b, _ := ChooseBookies(3, c, nil, rand.New(rand.NewPCG(seed, 1)))
		if !slices.Equal(a, b) {
			t.Fatalf("seed %d: two choices differ: %v, %v", seed, a, b)
		}
		if slices.Contains(a, "c") || hasDuplicate(a) {
			t.Fatalf("seed %d: chose %v: read-only or duplicate bookie", seed, a)
		}
	}
}

func TestCandidatesOnly(t *testing.T) {
	c := Candidates{Available: []BookieID{"a", "b", "c"}, ReadOnly: []BookieID{"c"}, Racks: map[BookieID]string{"b": "/r1"}}
	if got := c.Only([]BookieID{"b"}); got.Racks["b"] != "/r1" {
		t.Errorf("Only dropped b's rack: %v", got.Racks)
	}
	tests := []struct {
		allowed []BookieID
		want    Candidates
	}{
		{nil, c},
		{[]BookieID{"b"}, Candidates{Available: []BookieID{"b"}}},
		{[]BookieID{"c", "x"}, Candidates{Available: []BookieID{"c"}, ReadOnly: []BookieID{"c"}}},
		{[]BookieID{"x"}, Candidates{}},
	}
	for _, tc := range tests {
		got := c.Only(tc.allowed)
		if !slices.Equal(got.Available, tc.want.Available) || !slices.Equal(got.ReadOnly, tc.want.ReadOnly) {
			t.Errorf("Only(%v) = %v, want %v", tc.allowed, got, tc.want)
		}
	}
}

func TestMetadataValidateAndSegments(t *testing.T) {
	md, err := NewMetadata(CreateConfig{EnsembleSize: 3, WriteQuorum: 2, AckQuorum: 2}, []BookieID{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	if md.DigestType != 3 { // CRC32C
		t.Errorf("default digest type %v, want CRC32C", md.DigestType)
	}
	md.Segments = append(md.Segments, Segment{FirstEntryID: 10, Bookies: []BookieID{"a", "d", "c"}},
		Segment{FirstEntryID: 20, Bookies: []BookieID{"e", "d", "c"}})
	if err := md.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		entry int64
		first int64
		ws    []BookieID
	}{{0, 0, []BookieID{"a", "b"}}, {9, 0, []BookieID{"a", "b"}}, {10, 10, []BookieID{"d", "c"}},
		{19, 10, []BookieID{"d", "c"}}, {20, 20, []BookieID{"c", "e"}}, {1000, 20, []BookieID{"d", "c"}}} {
		s, ok := md.SegmentFor(tt.entry)
		if !ok || s.FirstEntryID != tt.first {
			t.Errorf("SegmentFor(%d) = %v %v, want first %d", tt.entry, s, ok, tt.first)
		}
		if ws := md.WriteSetBookies(tt.entry); !slices.Equal(ws, tt.ws) {
			t.Errorf("WriteSetBookies(%d) = %v, want %v", tt.entry, ws, tt.ws)
		}
	}
	if _, ok := md.SegmentFor(-1); ok {
		t.Error("SegmentFor(-1) found a segment")
	}
	bad := []func(m *Metadata){
		func(m *Metadata) { m.Segments[1].FirstEntryID = 20 },
		func(m *Metadata) { m.Segments[0].FirstEntryID = 1 },
		func(m *Metadata) { m.Segments[1].Bookies = []BookieID{"a", "a", "c"} },
		func(m *Metadata) { m.Segments[2].Bookies = m.Segments[2].Bookies[:2] },
		func(m *Metadata) { m.AckQuorum = 3 },
		func(m *Metadata) { m.State = 0 },
		func(m *Metadata) { m.DigestType = 99 },
	}
	for i, f := range bad {
		m := md.Clone()
		f(&m)
		if m.Validate() == nil {
			t.Errorf("bad metadata %d validated", i)
		}
	}
	c := md.Clone()
	c.Segments[0].Bookies[0] = "z"
	if md.Segments[0].Bookies[0] != "a" {
		t.Error("Clone shares segment slices")
	}
}
