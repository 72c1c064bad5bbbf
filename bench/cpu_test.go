package bench

import (
	"os"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name, stat string
		want       time.Duration
		ok         bool
	}{
		{"java", "4242 (java) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 40 0 123 0 0", 3250 * time.Millisecond, true},
		{"name with spaces and parens", "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0", 30 * time.Millisecond, true},
		{"no name", "7 a R 1", 0, false},
		{"too few fields", "7 (x) R 1 2 3", 0, false},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 x 2 0 0", 0, false},
		{"negative", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 -1 2 0 0", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.stat))
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("got %v, %v; want %v (ok %v)", got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestProcCPUTimeSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	if _, err := procCPUTime(0); err != nil {
		t.Fatal(err)
	}
	if _, err := procCPUTime(os.Getpid()); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseProcStat checks that no /proc content makes the parser panic.
func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("4242 (java) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 40 0 123 0 0"))
	f.Add([]byte("1 ()) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := parseProcStat(b); err == nil && d < 0 {
			t.Fatalf("negative cpu time %v from %q", d, b)
		}
		if d, err := parseStartTime(b); err == nil && d < 0 {
			t.Fatalf("negative start time %v from %q", d, b)
		}
	})
}

func TestParseStartTime(t *testing.T) {
	const full = "4242 (java) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 40 0 12345 0 0"
	tests := []struct {
		name, stat string
		want       time.Duration
		ok         bool
	}{
		{"java", full, 123450 * time.Millisecond, true},
		{"name with parens", "7 (a) (b) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 7", 70 * time.Millisecond, true},
		{"too few fields", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0", 0, false},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 z", 0, false},
		{"no name", "7 x R", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStartTime([]byte(tt.stat))
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("got %v, %v; want %v (ok %v)", got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestParseUptime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"12090.27 23741.04\n", 12090270 * time.Millisecond, true},
		{"0.00 0.00", 0, true},
		{"", 0, false},
		{"-1.5 2", 0, false},
		{"NaN 2", 0, false},
		{"1e300 2", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseUptime([]byte(tt.in))
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("got %v, %v; want %v (ok %v)", got, err, tt.want, tt.ok)
			}
		})
	}
}

// FuzzParseUptime checks that no /proc/uptime content makes the parser
// panic or return a negative time.
func FuzzParseUptime(f *testing.F) {
	f.Add([]byte("12090.27 23741.04\n"))
	f.Add([]byte("-0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := parseUptime(b); err == nil && d < 0 {
			t.Fatalf("negative uptime %v from %q", d, b)
		}
	})
}

func TestProcAgeSelf(t *testing.T) {
	if _, err := os.Stat("/proc/uptime"); err != nil {
		t.Skip("no /proc here")
	}
	age, err := procAge(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if age < 0 || age > 24*time.Hour {
		t.Fatalf("this process started %v ago", age)
	}
	if _, err := procCPUTimes([]int{os.Getpid(), 0}); err != nil {
		t.Fatal(err)
	}
}
