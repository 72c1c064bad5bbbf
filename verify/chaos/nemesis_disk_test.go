package chaos

import (
	"context"
	"testing"
	"time"

	"keeper/coordination/zxid"
)

func TestProgressOutcome(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name          string
		ctx           context.Context
		before, after zxid.ID
		hold          time.Duration
		want          string
		violations    int
	}{
		{"committed", context.Background(), 0x800000380, 0x900000001, 4 * time.Second, "quorum-committed", 0},
		{"nobody served before", context.Background(), 0, 0x900000001, 4 * time.Second, "unmeasured", 0},
		{"nobody served after", context.Background(), 0x800000380, 0, 4 * time.Second, "unmeasured", 0},
		{"stalled", context.Background(), 0x800000380, 0x800000380, 4 * time.Second, "stalled", 1},
		{"stalled, short hold", context.Background(), 0x800000380, 0x800000380, time.Second, "stalled", 0},
		{"stalled as the run ended", done, 0x800000380, 0x800000380, 4 * time.Second, "stalled", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Run{History: NewHistory(), Report: NewReport(7), logf: t.Logf}
			got := progressOutcome(tt.ctx, r, tt.before, tt.after, tt.hold, "s2's disk was full", "s1:not-serving@0x0")
			if got != tt.want || r.Report.Violations() != tt.violations {
				t.Errorf("progressOutcome = %q with %d violations, want %q with %d",
					got, r.Report.Violations(), tt.want, tt.violations)
			}
		})
	}
}
