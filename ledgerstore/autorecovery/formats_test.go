package autorecovery

import (
	"errors"
	"slices"
	"testing"
)

func TestMarkerPaths(t *testing.T) {
	p := NewPaths("/ledgers")
	for _, tc := range []struct {
		id           int64
		marker, lock string
	}{
		{0, "/ledgers/underreplication/ledgers/0000/0000/0000/0000/urL0000000000", "/ledgers/underreplication/locks/urL0000000000"},
		{1, "/ledgers/underreplication/ledgers/0000/0000/0000/0001/urL0000000001", "/ledgers/underreplication/locks/urL0000000001"},
		{0xfeed, "/ledgers/underreplication/ledgers/0000/0000/0000/feed/urL0000065261", "/ledgers/underreplication/locks/urL0000065261"},
		{0x7afebeef0000feed, "/ledgers/underreplication/ledgers/7afe/beef/0000/feed/urL8862731050418241261",
			"/ledgers/underreplication/locks/urL8862731050418241261"},
	} {
		if got := p.Marker(tc.id); got != tc.marker {
			t.Errorf("Marker(%d) = %s, want %s", tc.id, got, tc.marker)
		}
		if got := p.Lock(tc.id); got != tc.lock {
			t.Errorf("Lock(%d) = %s, want %s", tc.id, got, tc.lock)
		}
		if id, ok := ParseMarkerName(MarkerName(tc.id)); !ok || id != tc.id {
			t.Errorf("ParseMarkerName(MarkerName(%d)) = %d, %v", tc.id, id, ok)
		}
	}
	for _, bad := range []string{"", "urL", "urL123", "urL00000000x1", "L0000000001", "urL-000000001", "urL99999999999999999999"} {
		if id, ok := ParseMarkerName(bad); ok {
			t.Errorf("ParseMarkerName(%q) = %d, want refused", bad, id)
		}
	}
}

func TestMarkerFormat(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas []string
		ctime    int64
		text     string
	}{
		{"one", []string{"10.0.0.1:3181"}, -1, "replica: \"10.0.0.1:3181\"\n"},
		{"two and ctime", []string{"a:1", "b:2"}, 1700000000000, "replica: \"a:1\"\nreplica: \"b:2\"\nctime: 1700000000000\n"},
		{"none", nil, -1, ""},
		{"escapes", []string{"q\"\\\n\x01é"}, 0, "replica: \"q\\\"\\\\\\n\\001\\303\\251\"\nctime: 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EncodeMarker(tc.replicas, tc.ctime)
			if string(got) != tc.text {
				t.Fatalf("EncodeMarker = %q, want %q", got, tc.text)
			}
			replicas, ctime, err := DecodeMarker(got)
			if err != nil || !slices.Equal(replicas, tc.replicas) || ctime != tc.ctime {
				t.Fatalf("DecodeMarker = %q, %d, %v", replicas, ctime, err)
			}
		})
	}
	// What Java writes: spaces and field order as TextFormat prints them,
	// and also a single-line form TextFormat.merge accepts.
	for _, text := range []string{"replica: \"b1:3181\"\nreplica: \"b2:3181\"\n", "replica:\"b1:3181\" replica : 'b2:3181'"} {
		replicas, ctime, err := DecodeMarker([]byte(text))
		if err != nil || !slices.Equal(replicas, []string{"b1:3181", "b2:3181"}) || ctime != -1 {
			t.Errorf("DecodeMarker(%q) = %q, %d, %v", text, replicas, ctime, err)
		}
	}
	for _, bad := range []string{"replica: 1", "bogus: \"x\"", "replica: \"x", "ctime: \"x\""} {
		if _, _, err := DecodeMarker([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeMarker(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestSmallFormats(t *testing.T) {
	if got := string(EncodeVote("bookie-1:3181")); got != "bookieId: \"bookie-1:3181\"\n" {
		t.Errorf("EncodeVote = %q", got)
	}
	if id, err := DecodeVote(EncodeVote("b:1")); id != "b:1" || err != nil {
		t.Errorf("DecodeVote = %q, %v", id, err)
	}
	if got := EncodeLockData(""); len(got) != 0 {
		t.Errorf("EncodeLockData(\"\") = %q", got)
	}
	if id, err := DecodeLockData(EncodeLockData("host")); id != "host" || err != nil {
		t.Errorf("DecodeLockData = %q, %v", id, err)
	}
	if got := string(encodeLayout()); got != "type: \"BASIC\"\nversion: 1\n" {
		t.Errorf("encodeLayout = %q", got)
	}
	if err := checkLayout(encodeLayout()); err != nil {
		t.Error(err)
	}
	if err := checkLayout([]byte("type: \"BASIC\" version: 2")); err == nil {
		t.Error("checkLayout accepted version 2")
	}
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"30", 30, true}, {"-5", -5, true}, {"+7", 7, true},
		{"", 0, false}, {" 3", 0, false}, {"3s", 0, false}, {"99999999999", 0, false}, {"-", 0, false},
	} {
		got, err := DecodeDelay([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("DecodeDelay(%q) = %d, %v", tc.in, got, err)
		}
	}
	if got := string(EncodeDelay(45)); got != "45" {
		t.Errorf("EncodeDelay = %q", got)
	}
}

func TestVoteSeq(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"V_0000000007", 7, true}, {"V_12", 12, true}, {"V_", 0, false}, {"X_1", 0, false}, {"V_1a", 0, false}} {
		got, ok := parseVoteSeq(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseVoteSeq(%q) = %d, %v", tc.in, got, ok)
		}
	}
}
