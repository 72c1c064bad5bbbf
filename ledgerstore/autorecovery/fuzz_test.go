package autorecovery

import (
	"slices"
	"testing"
)

// FuzzDecodeMarker: markers come from any client of the metadata store.
// Whatever decodes must survive a round trip through EncodeMarker.
func FuzzDecodeMarker(f *testing.F) {
	f.Add([]byte("replica: \"b1:3181\"\nctime: 5\n"))
	f.Add([]byte("replica:'x' replica:\"\\001\""))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		replicas, ctime, err := DecodeMarker(data)
		if err != nil {
			return
		}
		if ctime < -1 {
			ctime = -1 // a stored negative ctime is not written back
		}
		again, ctime2, err := DecodeMarker(EncodeMarker(replicas, ctime))
		if err != nil || !slices.Equal(again, replicas) || ctime2 != ctime {
			t.Fatalf("round trip of %q: %q, %d, %v", data, again, ctime2, err)
		}
	})
}

// FuzzDecodeSmall covers the other decoders of znode contents.
func FuzzDecodeSmall(f *testing.F) {
	f.Add([]byte("bookieId: \"b:1\"\n"))
	f.Add([]byte("30"))
	f.Add([]byte("type: \"BASIC\"\nversion: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if id, err := DecodeVote(data); err == nil {
			if back, err := DecodeVote(EncodeVote(id)); err != nil || back != id {
				t.Fatalf("vote round trip of %q: %q, %v", data, back, err)
			}
		}
		if id, err := DecodeLockData(data); err == nil {
			if back, err := DecodeLockData(EncodeLockData(id)); err != nil || back != id {
				t.Fatalf("lock round trip of %q: %q, %v", data, back, err)
			}
		}
		if d, err := DecodeDelay(data); err == nil {
			if back, err := DecodeDelay(EncodeDelay(d)); err != nil || back != d {
				t.Fatalf("delay round trip of %q: %d, %v", data, back, err)
			}
		}
		_ = checkLayout(data)
		if _, ok := ParseMarkerName(string(data)); ok {
			id, _ := ParseMarkerName(string(data))
			if back, ok := ParseMarkerName(MarkerName(id)); !ok || back != id {
				t.Fatalf("marker name round trip of %q", data)
			}
		}
	})
}
