package durablelog_test

import (
	"errors"
	"testing"

	"keeper/internal/durablelog"
)

// FuzzScanner reads arbitrary files: the scanner must never panic, and an
// outcome must be consistent with the rules: a clean end reads every
// record; a torn tail happens only in the last file, and cutting the file
// there leaves a file that reads cleanly to the same records.
func FuzzScanner(f *testing.F) {
	h := []byte(toyHeader)
	a, b := toyRecord("alpha"), toyRecord("bravo")
	f.Add(cat(h, a, b), true)
	f.Add(cat(h, a, b[:5], zeros(40)), true)
	f.Add(cat(h, a, zeros(3), []byte{1}), false)
	f.Add(cat(h, []byte{0xff, 0xff}, a), true)
	f.Add(h[:4], true)
	f.Fuzz(func(t *testing.T, file []byte, last bool) {
		got, err := toyScan(file, last)
		if err == nil {
			return
		}
		if errors.Is(err, errToyTorn) {
			if !last {
				t.Fatalf("torn tail in a file that is not the last: %v", err)
			}
			off := tornOffset(t, err)
			if off == 0 {
				return // the file goes
			}
			again, err := toyScan(file[:off], last)
			if err != nil || len(again) != len(got) {
				t.Fatalf("after cutting at %d: read %d records (want %d), err %v", off, len(again), len(got), err)
			}
			return
		}
		if !errors.Is(err, errToyCorrupt) {
			t.Fatalf("err = %v, want torn or corrupt", err)
		}
	})
}

func tornOffset(t *testing.T, err error) int64 {
	t.Helper()
	var rerr *durablelog.RecordError
	if !errors.As(err, &rerr) {
		t.Fatalf("%v is not a *RecordError", err)
	}
	return rerr.Offset
}
