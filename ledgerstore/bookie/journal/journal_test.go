package journal_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/journal"
)

// workload appends n entries of ledger 1 (with a master key first) in
// batches of batch, syncing after each, and returns every body appended
// and the position after each record.
func workload(t *testing.T, j *journal.Journal, n, batch, payloadBytes int) ([][]byte, []journal.Position) {
	t.Helper()
	var bodies [][]byte
	var ends []journal.Position
	add := func(r journal.Record) {
		pos, err := j.Append(r)
		mustOK(t, err)
		bodies = append(bodies, bytes.Clone(r.Body()))
		ends = append(ends, pos)
	}
	add(journal.NewMasterKeyRecord(1, []byte("0123456789abcdefghij")))
	for i := range n {
		add(entryRec(t, 1, int64(i), payloadBytes))
		if (i+1)%batch == 0 {
			mustOK(t, j.Sync())
		}
	}
	mustOK(t, j.Sync())
	return bodies, ends
}

// TestAppendSyncReplay writes every kind of record across several files
// and reads them back in order, in both formats.
func TestAppendSyncReplay(t *testing.T) {
	for _, version := range []int{6, 7} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			m := vfs.NewMem()
			cfg := withFormat(version)
			j, err := journal.Open(m, "/j", cfg)
			mustOK(t, err)
			bodies, ends := workload(t, j, 200, 7, 300)
			for _, r := range []journal.Record{journal.NewFenceRecord(1), journal.NewExplicitLACRecord(1, entryBody(1, 199, 0)[:24])} {
				pos, err := j.Append(r)
				mustOK(t, err)
				bodies = append(bodies, r.Body())
				ends = append(ends, pos)
			}
			mustOK(t, j.Sync())
			for i, end := range ends {
				if end.Compare(j.Mark()) > 0 {
					t.Fatalf("record %d ends at %v, after the mark %v", i, end, j.Mark())
				}
				if i > 0 && end.Compare(ends[i-1]) <= 0 {
					t.Fatalf("record %d ends at %v, not after %v", i, end, ends[i-1])
				}
			}
			files, err := journal.Files(m, "/j")
			mustOK(t, err)
			if len(files) < 3 {
				t.Fatalf("%d files; the workload should roll several times", len(files))
			}
			for i, f := range files {
				if f.LogID != cfg.FirstLogID+int64(i) {
					t.Errorf("file %d has log id %#x, want %#x", i, f.LogID, cfg.FirstLogID+int64(i))
				}
			}
			mustOK(t, j.Close())
			got := replay(m, "/j", journal.Position{}, cfg)
			mustOK(t, got.err)
			if !slices.EqualFunc(got.bodies, bodies, bytes.Equal) {
				t.Fatalf("replayed %d records, appended %d:\n%s", len(got.bodies), len(bodies), describe(got.bodies))
			}
			if got.end != j.Mark() {
				t.Errorf("Replay ended at %v, the journal's mark is %v", got.end, j.Mark())
			}
		})
	}
}

// TestReplayFromMark replays from marks taken mid-way: exactly the records
// after each mark come back, and Open's mark after a restart is Replay's
// end.
func TestReplayFromMark(t *testing.T) {
	m := vfs.NewMem()
	j, err := journal.Open(m, "/j", testConfig)
	mustOK(t, err)
	var marks []journal.Position
	var counts []int // records appended before each mark
	var bodies [][]byte
	for i := range 120 {
		r := entryRec(t, 2, int64(i), 200)
		_, err := j.Append(r)
		mustOK(t, err)
		bodies = append(bodies, r.Body())
		if i%10 == 9 {
			mustOK(t, j.Sync())
			marks, counts = append(marks, j.Mark()), append(counts, len(bodies))
		}
	}
	mustOK(t, j.Close())
	for k, mark := range marks {
		got := replay(m, "/j", mark, testConfig)
		mustOK(t, got.err)
		if !slices.EqualFunc(got.bodies, bodies[counts[k]:], bytes.Equal) {
			t.Errorf("from %v: replayed %d records, want the %d after the mark", mark, len(got.bodies), len(bodies)-counts[k])
		}
	}
	j2, err := journal.Open(m, "/j", testConfig)
	mustOK(t, err)
	if j2.Mark() != marks[len(marks)-1] {
		t.Errorf("after reopening, Mark = %v, want %v", j2.Mark(), marks[len(marks)-1])
	}
	// The reopened journal starts a new file after the last one.
	pos, err := j2.Append(entryRec(t, 2, 120, 10))
	mustOK(t, err)
	if pos.LogID != marks[len(marks)-1].LogID+1 || pos.Offset <= journal.HeaderBytes {
		t.Errorf("first append after reopening at %v", pos)
	}
	mustOK(t, j2.Close())
}

// TestReplayNeedsTheMarkedFile: a mark whose file is gone is corruption,
// as in BookKeeper ("Recovery log is missing").
func TestReplayNeedsTheMarkedFile(t *testing.T) {
	m := vfs.NewMem()
	j, err := journal.Open(m, "/j", testConfig)
	mustOK(t, err)
	workload(t, j, 10, 5, 10)
	mustOK(t, j.Close())
	for _, mark := range []journal.Position{{LogID: 0x99, Offset: 512}, {LogID: 0x101, Offset: 512}} {
		got := replay(m, "/j", mark, testConfig)
		if !errors.Is(got.err, journal.ErrCorrupt) || len(got.bodies) > 0 {
			t.Errorf("from %v: %d records, %v; want ErrCorrupt", mark, len(got.bodies), got.err)
		}
	}
	got := replay(m, "/j", journal.Position{LogID: 0x100, Offset: 1 << 20}, testConfig)
	if re := recordErr(t, got.err); !errors.Is(got.err, journal.ErrCorrupt) || re.Offset != 1<<20 {
		t.Errorf("from a mark past the end of the file: %v", got.err)
	}
}

// TestReplaySkipsUnknownRecords: a special record of a kind this version
// does not know is skipped; the records around it come back.
func TestReplaySkipsUnknownRecords(t *testing.T) {
	unknown := journal.NewFenceRecord(4).Body()
	unknown[15] = 0x01 // entry id -0x1fff
	e1, e2 := entryBody(4, 0, 10), entryBody(4, 1, 10)
	m := vfs.NewMem()
	writeRaw(t, m, "/j", 1, padTo(join(fileHeader(7), frame7(e1), frame7(unknown), frame7(e2))))
	got := replay(m, "/j", journal.Position{}, testConfig)
	mustOK(t, got.err)
	if !slices.EqualFunc(got.bodies, [][]byte{e1, e2}, bytes.Equal) {
		t.Errorf("replayed %s", describe(got.bodies))
	}
}

// TestReadsBookKeeperFiles reads files as BookKeeper writes them: format
// 5 and 6, no padding record when a batch ends on a boundary, a later
// batch after it.
func TestReadsBookKeeperFiles(t *testing.T) {
	for _, version := range []int{5, 6} {
		e1 := entryBody(9, 0, 512-4-36) // ends exactly at 1024: no padding follows
		e2 := entryBody(9, 1, 50)
		m := vfs.NewMem()
		data := join(fileHeader(version), frame6(e1), frame6(e2))
		writeRaw(t, m, "/j", 1, join(padTo(data), zeros(2048)))
		if len(fileHeader(version))+len(frame6(e1)) != 1024 {
			t.Fatal("test set-up: e1 does not end on a boundary")
		}
		got := replay(m, "/j", journal.Position{}, testConfig)
		mustOK(t, got.err)
		if !slices.EqualFunc(got.bodies, [][]byte{e1, e2}, bytes.Equal) {
			t.Errorf("v%d: replayed %s", version, describe(got.bodies))
		}
		from := journal.Position{LogID: 1, Offset: 1024}
		if got := replay(m, "/j", from, testConfig); got.err != nil || len(got.bodies) != 1 {
			t.Errorf("v%d from %v: %d records, %v", version, from, len(got.bodies), got.err)
		}
	}
}

// TestAppendRefusals: records that can never be written are refused, and
// the journal stays usable.
func TestAppendRefusals(t *testing.T) {
	m := vfs.NewMem()
	j, err := journal.Open(m, "/j", testConfig)
	mustOK(t, err)
	force := journal.NewFenceRecord(1).Body()
	force[14] = 0xC0 // entry id -0x4000
	forceRec, err := journal.DecodeRecord(force)
	mustOK(t, err)
	for name, r := range map[string]journal.Record{
		"zero":         {},
		"force ledger": forceRec,
		"too large":    entryRec(t, 1, 0, testConfig.MaxRecordBytes),
	} {
		if _, err := j.Append(r); err == nil {
			t.Errorf("%s: Append accepted it", name)
		}
	}
	if j.Err() != nil {
		t.Fatalf("refusals poisoned the journal: %v", j.Err())
	}
	_, err = j.Append(entryRec(t, 1, 0, 10))
	mustOK(t, err)
	mustOK(t, j.Close())
	for name, err := range map[string]error{"Append": appendErr(j), "Sync": j.Sync(), "Flush": j.Flush(), "Close": j.Close()} {
		if !errors.Is(err, journal.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func appendErr(j *journal.Journal) error {
	_, err := j.Append(journal.NewFenceRecord(1))
	return err
}

// TestFirstLogID: new files take the next id after the last file, and
// never one below FirstLogID.
func TestFirstLogID(t *testing.T) {
	m := vfs.NewMem()
	first := func(cfg journal.Config) int64 {
		j, err := journal.Open(m, "/j", cfg)
		mustOK(t, err)
		pos, err := j.Append(journal.NewFenceRecord(1))
		mustOK(t, err)
		mustOK(t, j.Close())
		return pos.LogID
	}
	cfg := testConfig
	if got := first(cfg); got != 0x100 {
		t.Errorf("first file %#x, want FirstLogID", got)
	}
	cfg.FirstLogID = 1 // a clock that went backwards
	if got := first(cfg); got != 0x101 {
		t.Errorf("second file %#x, want 0x101", got)
	}
	cfg.FirstLogID = 0x500
	if got := first(cfg); got != 0x500 {
		t.Errorf("third file %#x, want 0x500", got)
	}
}

// waitWhenEmpty is BookKeeper's default group commit: a batch waits for
// its age even when nothing more is queued.
func waitWhenEmpty(c *journal.Config) { c.WaitWhenQueueEmpty = true }

// TestShouldFlush is the group-commit rule's table test.
func TestShouldFlush(t *testing.T) {
	cfg := testConfig
	cfg.MaxGroupWait = 2 * time.Millisecond
	cfg.BufferedWritesThresholdBytes = 1000
	tests := []struct {
		name       string
		cfg        func(*journal.Config)
		records    int // of 100-byte bodies (108 bytes framed)
		age        time.Duration
		queueEmpty bool
		want       bool
		wait       time.Duration
	}{
		{name: "nothing pending", records: 0, age: time.Hour, want: false},
		{name: "young batch", records: 1, age: time.Millisecond, want: false, wait: time.Millisecond},
		{name: "at the wait", records: 1, age: 2 * time.Millisecond, want: true},
		{name: "past the wait", records: 1, age: 3 * time.Millisecond, want: true},
		{name: "bytes at the threshold", records: 9, age: 0, want: false, wait: 2 * time.Millisecond}, // 972 bytes
		{name: "bytes past the threshold", records: 10, age: 0, want: true},
		{name: "queue empty: natural group commit", records: 1, queueEmpty: true, want: true},
		{name: "queue empty, natural, bytes past the threshold", records: 10, queueEmpty: true, want: true},
		{name: "queue empty, waiting (journalFlushWhenQueueEmpty=false)", cfg: waitWhenEmpty,
			records: 1, queueEmpty: true, want: false, wait: 2 * time.Millisecond},
		{name: "queue empty, waiting, at the wait", cfg: waitWhenEmpty,
			records: 1, age: 2 * time.Millisecond, queueEmpty: true, want: true},
		{name: "entries past the threshold", cfg: func(c *journal.Config) { c.BufferedEntriesThreshold = 3 },
			records: 4, want: true, wait: 2 * time.Millisecond},
		{name: "entries at the threshold", cfg: func(c *journal.Config) { c.BufferedEntriesThreshold = 3 },
			records: 3, want: false, wait: 2 * time.Millisecond},
		{name: "no waiting", cfg: func(c *journal.Config) { c.MaxGroupWait = -1 }, records: 1, want: true},
	}
	for _, tt := range tests {
		c := cfg
		if tt.cfg != nil {
			tt.cfg(&c)
		}
		j, err := journal.Open(vfs.NewMem(), "/j", c)
		mustOK(t, err)
		for i := range tt.records {
			_, err := j.Append(entryRec(t, 1, int64(i), 100-36))
			mustOK(t, err)
		}
		if got := j.ShouldFlush(tt.age, tt.queueEmpty); got != tt.want {
			t.Errorf("%s: ShouldFlush = %v, want %v", tt.name, got, tt.want)
		}
		if got := j.FlushWait(tt.age); !tt.want && got != tt.wait {
			t.Errorf("%s: FlushWait = %v, want %v", tt.name, got, tt.wait)
		}
		mustOK(t, j.Flush())
		if j.ShouldFlush(time.Hour, true) {
			t.Errorf("%s: ShouldFlush after Flush", tt.name)
		}
	}
}

// TestConfigValidate lists configurations that cannot work.
func TestConfigValidate(t *testing.T) {
	bad := []journal.Config{
		{FirstLogID: -1},
		{FormatVersion: 5},
		{FormatVersion: 8},
		{AlignmentBytes: 256},
		{AlignmentBytes: 1000},
		{AlignmentBytes: 1 << 20},
		{PreAllocSizeBytes: 100},
		{PreAllocSizeBytes: 4096, AlignmentBytes: 8192},
		{MaxRecordBytes: 15},
		{MaxSizeBytes: -1},
		{BufferedEntriesThreshold: -1},
	}
	for _, cfg := range bad {
		if cfg.Validate() == nil {
			t.Errorf("%+v: Validate accepted it", cfg)
		}
		if _, err := journal.Open(vfs.NewMem(), "/j", cfg); err == nil {
			t.Errorf("%+v: Open accepted it", cfg)
		}
	}
	mustOK(t, journal.Config{}.Validate())
	mustOK(t, testConfig.Validate())
}
