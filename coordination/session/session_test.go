package session

import (
	"math"
	"slices"
	"testing"
)

func TestPassword(t *testing.T) {
	tests := []struct {
		id   int64
		want [PasswordLen]byte
	}{
		// docs/zookeeper-protocol.md §6.2, verified against ZooKeeper 3.8.0
		{0x0100000c4c560000, [PasswordLen]byte{0x28, 0x04, 0x47, 0x7c, 0x95, 0xe6, 0x6d, 0x09, 0x46, 0xd7, 0x51, 0x30, 0x66, 0xd5, 0x6b, 0xd8}},
	}
	for _, tt := range tests {
		if got := Password(tt.id); got != tt.want {
			t.Errorf("Password(%#x) = % x, want % x", tt.id, got, tt.want)
		}
		if !CheckPassword(tt.id, tt.want[:]) {
			t.Errorf("CheckPassword(%#x, right password) = false", tt.id)
		}
		bad := tt.want
		bad[15] ^= 1
		if CheckPassword(tt.id, bad[:]) || CheckPassword(tt.id, tt.want[:15]) {
			t.Errorf("CheckPassword(%#x) accepted a wrong password", tt.id)
		}
	}
	zero := Password(0)
	if CheckPassword(0, zero[:]) {
		t.Error("CheckPassword accepted session id 0")
	}
}

// TestJavaRandom pins the generator to java.util.Random's well-known first
// outputs: new Random(0).nextInt() and new Random(42).nextInt().
func TestJavaRandom(t *testing.T) {
	tests := []struct {
		seed int64
		want int32
	}{
		{0, -1155484576},
		{42, -1170105035},
	}
	for _, tt := range tests {
		if got := newJavaRandom(tt.seed).nextInt(); got != tt.want {
			t.Errorf("Random(%d).nextInt() = %d, want %d", tt.seed, got, tt.want)
		}
	}
}

func TestInitialID(t *testing.T) {
	tests := []struct {
		serverID, nowMs, want int64
	}{
		{1, 0xc4c56, 0x0100000c4c560000},          // docs/zookeeper-protocol.md §6.1 example
		{1, 0, 0x0100000000000000},                //
		{2, 0xff_ffff_ffff, 0x02ffffffffff0000},   // 40 clock bits
		{2, 0x1_ff_ffff_ffff, 0x02ffffffffff0000}, // bit 40 shifted out
		{0xff, -1, -1 << 16},                      // logical shift keeps the server byte
		{0x80, 0, math.MinInt64 + 1},              // container marker skipped
		{0, 0, 0},                                 // the table's generator skips it
	}
	for _, tt := range tests {
		if got := InitialID(tt.serverID, tt.nowMs); got != tt.want {
			t.Errorf("InitialID(%d, %#x) = %#x, want %#x", tt.serverID, tt.nowMs, got, tt.want)
		}
	}
}

func TestNegotiate(t *testing.T) {
	tests := []struct{ req, lo, hi, want int32 }{
		{1, 4000, 40000, 4000}, // docs/zookeeper-protocol.md §1.3: requested 1 gave 4000
		{10_000_000, 4000, 40000, 40000},
		{10000, 4000, 40000, 10000},
		{4000, 4000, 40000, 4000},
		{40000, 4000, 40000, 40000},
		{-5, 4000, 40000, 4000},
		{5000, 6000, 3000, 3000}, // min > max: max wins, as in ZooKeeper
	}
	for _, tt := range tests {
		if got := Negotiate(tt.req, tt.lo, tt.hi); got != tt.want {
			t.Errorf("Negotiate(%d, %d, %d) = %d, want %d", tt.req, tt.lo, tt.hi, got, tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg Config
		ok  bool
	}{
		{Config{TickMs: 2000, ServerID: 1}, true},
		{Config{TickMs: 1, ServerID: 255}, true},
		{Config{TickMs: 0, ServerID: 1}, false},
		{Config{TickMs: -1, ServerID: 1}, false},
		{Config{TickMs: 2000, ServerID: 256}, false},
		{Config{TickMs: 2000, ServerID: -1}, false},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("%+v.Validate() = %v, want ok=%v", tt.cfg, err, tt.ok)
		}
		if _, err2 := NewTable(tt.cfg); (err2 == nil) != tt.ok {
			t.Errorf("NewTable(%+v) error = %v, want ok=%v", tt.cfg, err2, tt.ok)
		}
	}
}

func newTable(t *testing.T, cfg Config) *Table {
	t.Helper()
	tb, err := NewTable(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestGenerator(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []int64
	}{
		{"standalone", Config{TickMs: 2000, ServerID: 1, StartMs: 0xc4c56},
			[]int64{0x0100000c4c560000, 0x0100000c4c560001, 0x0100000c4c560002}},
		{"skips zero", Config{TickMs: 2000, ServerID: 0, StartMs: 0}, []int64{1, 2}},
		{"skips the container marker", Config{TickMs: 2000, ServerID: 0x80, StartMs: 0},
			[]int64{math.MinInt64 + 1, math.MinInt64 + 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := newTable(t, tt.cfg)
			var got []int64
			for range tt.want {
				got = append(got, tb.Create(4000, 0))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ids = %#x, want %#x", got, tt.want)
			}
		})
	}

	// Counting up past the largest id wraps to the container marker, which
	// is skipped too.
	tb := newTable(t, Config{TickMs: 2000})
	tb.nextID = math.MaxInt64
	if got := []int64{tb.Create(1, 0), tb.Create(1, 0)}; !slices.Equal(got, []int64{math.MaxInt64, math.MinInt64 + 1}) {
		t.Errorf("ids across the wrap = %#x", got)
	}

	// An id already in the table (from a snapshot, say) is not reused.
	tb = newTable(t, Config{TickMs: 2000, ServerID: 1})
	first := InitialID(1, 0)
	tb.Add(first, 4000, 0)
	tb.Add(first+1, 4000, 0)
	if got := tb.Create(4000, 0); got != first+2 {
		t.Errorf("Create reused a live id: got %#x, want %#x", got, first+2)
	}
}

// TestExpiryBoundaries checks the bucket rule: after a touch at now, a
// session expires at the first multiple of the tick strictly after
// now+timeout, so it lives more than timeout and at most timeout+tick.
func TestExpiryBoundaries(t *testing.T) {
	const tick, timeout = 2000, 5000
	tests := []struct {
		nowMs, wantExpiry int64
	}{
		{0, 6000},
		{1, 6000},
		{999, 6000},
		{1000, 8000}, // 6000 is a multiple: round up past it
		{1001, 8000},
		{2999, 8000},
		{3000, 10000},
	}
	for _, tt := range tests {
		tb := newTable(t, Config{TickMs: tick, ServerID: 1})
		id := tb.Create(timeout, tt.nowMs)
		s, _ := tb.Get(id)
		if s.ExpiresAtMs != tt.wantExpiry {
			t.Errorf("touch at %d: expires at %d, want %d", tt.nowMs, s.ExpiresAtMs, tt.wantExpiry)
		}
		if life := s.ExpiresAtMs - tt.nowMs; life <= timeout || life > timeout+tick {
			t.Errorf("touch at %d: lives %d ms, want (%d, %d]", tt.nowMs, life, timeout, timeout+tick)
		}
		if next, ok := tb.NextExpiryMs(); !ok || next != tt.wantExpiry {
			t.Errorf("NextExpiryMs = %d, %v; want %d", next, ok, tt.wantExpiry)
		}
		if got := tb.Expire(tt.wantExpiry - 1); len(got) != 0 {
			t.Errorf("touch at %d: expired at %d, a ms early", tt.nowMs, tt.wantExpiry-1)
		}
		if got := tb.Expire(tt.wantExpiry); !slices.Equal(got, []int64{id}) {
			t.Errorf("touch at %d: Expire(%d) = %v, want [%d]", tt.nowMs, tt.wantExpiry, got, id)
		}
	}
}

func TestTouchMovesBucket(t *testing.T) {
	tb := newTable(t, Config{TickMs: 1000, ServerID: 1})
	a := tb.Create(3000, 0) // bucket 4000
	b := tb.Create(3000, 0) // bucket 4000
	c := tb.Create(6000, 0) // bucket 7000
	if !tb.Touch(a, 2500) { // bucket 6000
		t.Fatal("Touch(a) = false")
	}
	tb.Touch(b, 100) // same bucket 4000: no change
	want := []Bucket{{4000, []int64{b}}, {6000, []int64{a}}, {7000, []int64{c}}}
	if got := tb.Buckets(); !equalBuckets(got, want) {
		t.Fatalf("Buckets = %v, want %v", got, want)
	}
	steps := []struct {
		nowMs int64
		want  []int64
		next  int64
	}{
		{3999, nil, 4000},
		{4000, []int64{b}, 6000},
		{4000, nil, 6000}, // taken once only
		{9000, []int64{a, c}, 0},
	}
	for _, st := range steps {
		if got := tb.Expire(st.nowMs); !slices.Equal(got, st.want) {
			t.Errorf("Expire(%d) = %v, want %v", st.nowMs, got, st.want)
		}
		next, ok := tb.NextExpiryMs()
		if ok != (st.next != 0) || next != st.next {
			t.Errorf("after Expire(%d): NextExpiryMs = %d, %v; want %d", st.nowMs, next, ok, st.next)
		}
	}
	if tb.Len() != 3 {
		t.Errorf("Len = %d after expiry, want 3: expired sessions stay until Remove", tb.Len())
	}
	for _, id := range []int64{a, b, c} {
		if s, _ := tb.Get(id); !s.Closing {
			t.Errorf("session %#x not closing after Expire", id)
		}
		if tb.Touch(id, 9000) {
			t.Errorf("Touch(%#x) succeeded on an expired session", id)
		}
		if !tb.Remove(id) {
			t.Errorf("Remove(%#x) = false", id)
		}
	}
	if tb.Len() != 0 || len(tb.Buckets()) != 0 {
		t.Errorf("table not empty after Remove: %v %v", tb.All(), tb.Buckets())
	}
}

func TestClosing(t *testing.T) {
	tb := newTable(t, Config{TickMs: 1000, ServerID: 1})
	a := tb.Create(3000, 0)
	b := tb.Create(3000, 0)
	if !tb.SetClosing(a) || tb.SetClosing(12345) {
		t.Fatal("SetClosing result wrong")
	}
	if tb.Touch(a, 10) || tb.SetTimeout(a, 9000, 10) {
		t.Error("a closing session was touched")
	}
	if s, _ := tb.Get(a); s.ExpiresAtMs != 4000 || s.TimeoutMs != 3000 {
		t.Errorf("closing session changed: %+v", s)
	}
	// Its bucket comes due: it leaves the bucket but is not returned, since
	// its closeSession is already under way.
	if got := tb.Expire(4000); !slices.Equal(got, []int64{b}) {
		t.Errorf("Expire = %v, want [%d]", got, b)
	}
	if len(tb.Buckets()) != 0 {
		t.Errorf("Buckets = %v, want none", tb.Buckets())
	}
	if tb.Touch(999, 0) || tb.Remove(999) {
		t.Error("unknown session touched or removed")
	}
	if _, ok := tb.Get(999); ok {
		t.Error("Get(unknown) = ok")
	}
}

func TestAddAndSetTimeout(t *testing.T) {
	tb := newTable(t, Config{TickMs: 1000, ServerID: 1})
	const id = 0x0100000000000042
	if !tb.Add(id, 4000, 0) {
		t.Fatal("Add(new) = false")
	}
	if !tb.SetTimeout(id, 10000, 500) { // reconnect with a longer timeout
		t.Fatal("SetTimeout = false")
	}
	s, _ := tb.Get(id)
	if want := (Session{ID: id, TimeoutMs: 10000, CreateTimeoutMs: 4000, ExpiresAtMs: 11000}); s != want {
		t.Errorf("after SetTimeout: %+v, want %+v", s, want)
	}
	tb.Touch(id, 1000) // touches use the new timeout
	if s, _ = tb.Get(id); s.ExpiresAtMs != 12000 {
		t.Errorf("touch used the old timeout: %+v", s)
	}
	// Add on a known session (its createSession txn applied on the server
	// that created it) updates timeouts and bucket, and keeps Closing.
	tb.SetClosing(id)
	if tb.Add(id, 6000, 2000) {
		t.Error("Add(existing) = true")
	}
	s, _ = tb.Get(id)
	if want := (Session{ID: id, TimeoutMs: 6000, CreateTimeoutMs: 6000, ExpiresAtMs: 9000, Closing: true}); s != want {
		t.Errorf("after Add(existing): %+v, want %+v", s, want)
	}
}

func TestAllAndBucketsSorted(t *testing.T) {
	tb := newTable(t, Config{TickMs: 100, ServerID: 3})
	ids := []int64{0x0300000000000009, 0x0300000000000001, 0x0300000000000005, 0x0300000000000003}
	for i, id := range ids {
		tb.Add(id, int32(1000+100*(i%2)), 0) // two buckets: 1100 and 1200
	}
	var got []int64
	for _, s := range tb.All() {
		got = append(got, s.ID)
	}
	if want := slices.Sorted(slices.Values(ids)); !slices.Equal(got, want) {
		t.Errorf("All ids = %#x, want %#x", got, want)
	}
	want := []Bucket{{1100, []int64{ids[2], ids[0]}}, {1200, []int64{ids[1], ids[3]}}}
	if got := tb.Buckets(); !equalBuckets(got, want) {
		t.Errorf("Buckets = %v, want %v", got, want)
	}
}

func equalBuckets(a, b []Bucket) bool {
	return slices.EqualFunc(a, b, func(x, y Bucket) bool {
		return x.ExpiresAtMs == y.ExpiresAtMs && slices.Equal(x.IDs, y.IDs)
	})
}

// BenchmarkTouch measures the per-packet cost with 100,000 live sessions.
func BenchmarkTouch(b *testing.B) {
	tb, _ := NewTable(Config{TickMs: 2000, ServerID: 1})
	ids := make([]int64, 100_000)
	for i := range ids {
		ids[i] = tb.Create(30000, 0)
	}
	now := int64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now += 7
		tb.Touch(ids[i%len(ids)], now)
	}
}
