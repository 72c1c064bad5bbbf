package bench

import (
	"bytes"
	"os"
	"reflect"
	"runtime"
	"testing"
	"time"
)

func TestSharedPauses(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(at, n int) pause {
		return pause{t0.Add(time.Duration(at) * time.Millisecond), time.Duration(n) * time.Millisecond}
	}
	for _, tt := range []struct {
		name       string
		a, b, want []pause
	}{
		{"none", nil, []pause{ms(0, 5)}, nil},
		{"same", []pause{ms(0, 5)}, []pause{ms(0, 5)}, []pause{ms(0, 5)}},
		{"overlap", []pause{ms(0, 5)}, []pause{ms(3, 5)}, []pause{ms(3, 2)}},
		{"disjoint", []pause{ms(0, 5)}, []pause{ms(6, 5)}, nil},
		{"touching", []pause{ms(0, 5)}, []pause{ms(5, 5)}, nil},
		{"one covers two", []pause{ms(0, 20)}, []pause{ms(2, 3), ms(10, 15)}, []pause{ms(2, 3), ms(10, 10)}},
		{"interleaved", []pause{ms(0, 4), ms(10, 4), ms(100, 8)}, []pause{ms(2, 10), ms(101, 2), ms(200, 9)},
			[]pause{ms(2, 2), ms(10, 2), ms(101, 2)}},
	} {
		if got := sharedPauses(tt.a, tt.b); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
		if got := sharedPauses(tt.b, tt.a); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s, swapped: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMergePauses(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(at, n int) pause {
		return pause{t0.Add(time.Duration(at) * time.Millisecond), time.Duration(n) * time.Millisecond}
	}
	got := mergePauses([]pause{ms(100, 5), ms(0, 5), ms(3, 5), ms(4, 1), ms(8, 2), ms(50, 1)})
	if want := []pause{ms(0, 10), ms(50, 1), ms(100, 5)}; !reflect.DeepEqual(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
	if iv := medianIntervalMs(got); iv != 50 {
		t.Errorf("median interval %v ms, want 50", iv)
	}
	if iv := medianIntervalMs(got[:1]); iv != 0 {
		t.Errorf("median interval of one pause %v, want 0", iv)
	}
}

// TestStalls runs the three phases briefly. Whether this machine stops is
// not the test's business; that each phase ran what it says is.
func TestStalls(t *testing.T) {
	dir := t.TempDir()
	res, err := Stalls(t.Context(), StallsConfig{Dir: dir, Spinners: 1, Writers: 2, Rate: 200, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Spinners != 1 || res.Writers != 2 || res.RatePerWriter != 200 || res.GapUs != 4000 {
		t.Errorf("result %+v", res)
	}
	if res.Spin.Syncs != 0 || res.Sync.Stalls != 0 || res.Sync.StalledMsPerSec != 0 {
		t.Errorf("the spin phase synced or the sync phase spun: %+v %+v", res.Spin, res.Sync)
	}
	for name, ph := range map[string]StallsPhase{"sync": res.Sync, "both": res.Both} {
		// 2 writers at 200/s for 100 ms: 40 paced syncs at most.
		if ph.Syncs <= 0 || ph.Syncs > 42 || !(0 < ph.SyncP50Us && ph.SyncP50Us <= ph.SyncP99Us && ph.SyncP99Us <= ph.SyncP999Us) {
			t.Errorf("%s: %+v", name, ph)
		}
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("left %v behind (%v)", left, err)
	}
	line, err := res.MarshalLine()
	if err != nil || bytes.IndexByte(line, '\n') != len(line)-1 {
		t.Fatalf("%q %v", line, err)
	}
	t.Logf("%s", bytes.TrimSpace(line))
	if d := (StallsConfig{Dir: "."}).withDefaults(); d.Spinners != min(runtime.NumCPU(), 64) || d.Writers != 3 ||
		d.Rate != 1000 || d.Duration != 4*time.Second || d.Gap != 4*time.Millisecond {
		t.Errorf("defaults %+v, want a spinner per CPU", d)
	}
	for _, bad := range []StallsConfig{{}, {Dir: ".", Spinners: -1}, {Dir: ".", Writers: 65}, {Dir: ".", Rate: -1},
		{Dir: ".", Gap: -time.Millisecond}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
