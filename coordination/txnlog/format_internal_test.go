package txnlog

import "testing"

// TestPaddedSize checks the FilePadding rule case by case.
func TestPaddedSize(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name                string
		pos, size, prealloc int64
		want                int64
	}{
		{"new file", 16, 16, 64 * mib, 64*mib + 16},
		{"far from the end", 1000, 64*mib + 16, 64 * mib, 64*mib + 16},
		{"just outside the margin", 64*mib + 16 - 4097, 64*mib + 16, 64 * mib, 64*mib + 16},
		{"at the margin", 64*mib + 16 - 4096, 64*mib + 16, 64 * mib, 128*mib + 16},
		{"past the end: next multiple", 64*mib + 100, 64*mib + 16, 64 * mib, 128 * mib},
		{"disabled", 16, 16, 0, 16},
		{"disabled, negative", 16, 16, -1, 16},
	}
	for _, tt := range tests {
		if got := paddedSize(tt.pos, tt.size, tt.prealloc); got != tt.want {
			t.Errorf("%s: paddedSize(%d, %d, %d) = %d, want %d", tt.name, tt.pos, tt.size, tt.prealloc, got, tt.want)
		}
	}
}
