package chaos

import (
	"strings"
	"testing"
)

// TestTailCheck: scenario 13's tailing-reader check passes a reader that
// sees LACs rise and entries in order with the payloads written, and
// reports each way of breaking that: a LAC going back, a LAC below an
// entry read, a LAC or an entry past what was sent, an entry out of
// order, a wrong payload.
func TestTailCheck(t *testing.T) {
	sent := [][]byte{[]byte("e0"), []byte("e1"), []byte("e2")}
	type step struct {
		lac     int64 // a LAC seen, when entry is ""
		id      int64
		entry   string
		sentNow int // entries sent when the step happens
	}
	lac := func(v int64, n int) step { return step{lac: v, sentNow: n} }
	read := func(id int64, p string, n int) step { return step{id: id, entry: p, sentNow: n} }
	for _, tt := range []struct {
		name  string
		steps []step
		want  []string // a substring of each problem, in order
	}{
		{"in order", []step{lac(-1, 0), lac(0, 1), read(0, "e0", 2), lac(1, 2), read(1, "e1", 3), lac(2, 3),
			read(2, "e2", 3), lac(2, 3)}, nil},
		{"LAC ahead of the callbacks but sent", []step{lac(1, 2)}, nil},
		{"LAC goes back", []step{lac(2, 3), lac(1, 3)}, []string{"LAC 1 seen after LAC 2"}},
		{"LAC below an entry read", []step{read(0, "e0", 1), read(1, "e1", 2), lac(0, 2)},
			[]string{"LAC 0 seen after entry 1 was read"}},
		{"LAC past what was sent", []step{lac(2, 2)}, []string{"LAC 2 seen when the writer had sent entries up to 1"}},
		{"entry past what was sent", []step{read(0, "e0", 1), read(1, "e1", 1)},
			[]string{"entry 1 read when the writer had sent entries up to 0"}},
		{"entry read twice", []step{read(0, "e0", 3), read(0, "e0", 3)}, []string{"entry 0 read after entry 0"}},
		{"entry skipped", []step{read(1, "e1", 3)}, []string{"entry 1 read when entry 0 was next"}},
		{"wrong payload", []step{read(0, "e1", 3)}, []string{`entry 0 read as "e1"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newTailCheck(7)
			var got []string
			for _, s := range tt.steps {
				if s.entry == "" {
					got = append(got, c.lac(s.lac, s.sentNow)...)
				} else {
					got = append(got, c.entry(s.id, []byte(s.entry), sent[:s.sentNow])...)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) || !strings.HasPrefix(got[i], "ledger 7:") {
					t.Errorf("problem %d = %q, want it to say %q about ledger 7", i, got[i], w)
				}
			}
		})
	}
}
