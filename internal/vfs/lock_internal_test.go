package vfs

import (
	"strings"
	"testing"
)

func TestParseHolderPID(t *testing.T) {
	tests := []struct {
		name, text string
		want       int
	}{
		{"a record", "version=1\npid=1234\ncommand=keeper server\n", 1234},
		{"crlf lines", "version=1\r\npid=77\r\n", 77},
		{"unknown lines first", "holder=x\nversion=9\npid=5\n", 5},
		{"empty: the holder has not written it yet", "", 0},
		{"no pid line", "version=1\ncommand=x\n", 0},
		{"not a number", "pid=12ab\n", 0},
		{"negative", "pid=-3\n", 0},
		{"zero", "pid=0\n", 0},
		{"cut off before the newline", "version=1\npid=42", 42},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseHolderPID([]byte(tc.text)); got != tc.want {
				t.Errorf("parseHolderPID(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
}

func TestHolderRecord(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a command", []string{"keeper", "server", "zoo.cfg"}, "version=1\npid=7\ncommand=keeper server zoo.cfg\n"},
		{"newlines in an argument stay on one line", []string{"keeper", "a\nb\rc"}, "version=1\npid=7\ncommand=keeper a b c\n"},
		{"no arguments", nil, "version=1\npid=7\ncommand=\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(holderRecord(7, tc.args))
			if got != tc.want {
				t.Errorf("holderRecord = %q, want %q", got, tc.want)
			}
			if pid := parseHolderPID([]byte(got)); pid != 7 {
				t.Errorf("read back pid %d", pid)
			}
		})
	}
	long := holderRecord(7, []string{strings.Repeat("é", maxLockFileBytes)})
	if len(long) > maxLockFileBytes || !strings.HasSuffix(string(long), "é\n") {
		t.Errorf("a long command: %d bytes ending %q, want at most %d ending in whole runes",
			len(long), long[len(long)-4:], maxLockFileBytes)
	}
}
