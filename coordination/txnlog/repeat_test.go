package txnlog_test

import (
	"errors"
	"slices"
	"testing"

	"keeper/coordination/txnlog"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// Apache ZooKeeper 3.8's follower logs the txns of a failed sync again when
// it syncs anew: a record that repeats an earlier one byte for byte is
// passed over, within a file and across files; a record whose zxid does
// not increase and whose bytes differ from the one read with that zxid is
// corrupt.
func TestRepeatedRecords(t *testing.T) {
	z := func(c uint32) zxid.ID { return zxid.Make(2, c) }
	changed := payload(z(2))
	changed[len(changed)-1] ^= 1 // the digest's last byte
	frames := func(cs ...uint32) []byte {
		var b []byte
		for _, c := range cs {
			b = append(b, frame(payload(z(c)))...)
		}
		return b
	}
	type file struct {
		name string
		data []byte
	}
	tests := []struct {
		name    string
		files   []file
		want    []zxid.ID
		repeats int
		corrupt bool
	}{
		{name: "one record twice", files: []file{{"log.200000001", join(header, frames(1, 1, 2))}},
			want: seq(z(1), z(2)), repeats: 1},
		{name: "a run again, then on", files: []file{{"log.200000001", join(header, frames(1, 2, 3, 2, 3, 4, 5))}},
			want: seq(z(1), z(5)), repeats: 2},
		{name: "the run in the next file", files: []file{
			{"log.200000001", join(header, frames(1, 2, 3))},
			{"log.200000002", join(header, frames(2, 3, 4))}},
			want: seq(z(1), z(4)), repeats: 2},
		{name: "same zxid, other bytes", files: []file{{"log.200000001", join(header, frames(1, 2), frame(changed), frames(3))}},
			want: seq(z(1), z(2)), corrupt: true},
		{name: "a zxid never read", files: []file{{"log.200000001", join(header, frames(1, 3, 2))}},
			want: []zxid.ID{z(1), z(3)}, corrupt: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			for _, f := range tc.files {
				writeRaw(t, fsys, "/logs", f.name, f.data)
			}
			it, err := txnlog.Read(fsys, "/logs", 0, testConfig)
			mustOK(t, err)
			defer it.Close()
			var got []zxid.ID
			for {
				tx, err := it.Next()
				if err != nil {
					if tc.corrupt != errors.Is(err, txnlog.ErrCorrupt) || (!tc.corrupt && err.Error() != "EOF") {
						t.Fatalf("error %v, want corrupt=%v", err, tc.corrupt)
					}
					break
				}
				got = append(got, tx.Header.Zxid)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("read %v, want %v", got, tc.want)
			}
			if !tc.corrupt && it.Repeats() != tc.repeats {
				t.Errorf("%d repeats passed over, want %d", it.Repeats(), tc.repeats)
			}
		})
	}
}
