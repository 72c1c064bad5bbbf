package zxid

import "testing"

func TestParts(t *testing.T) {
	tests := []struct {
		id      ID
		epoch   Epoch
		counter uint32
		str     string
	}{
		{0, 0, 0, "0x0"},
		{Make(1, 2), 1, 2, "0x100000002"},
		{Make(0xffff, 0xffffffff), 0xffff, 0xffffffff, "0xffffffffffff"},
	}
	for _, tc := range tests {
		if tc.id.Epoch() != tc.epoch || tc.id.Counter() != tc.counter || tc.id.String() != tc.str {
			t.Errorf("%d: got epoch %d counter %d str %s, want %d %d %s",
				int64(tc.id), tc.id.Epoch(), tc.id.Counter(), tc.id, tc.epoch, tc.counter, tc.str)
		}
	}
}
