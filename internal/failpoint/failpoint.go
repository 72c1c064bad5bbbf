// Package failpoint names the durability points of learner sync and
// snapshot writing, where a fault-injection test crashes a server (the
// chaos harness, docs/fault-model.md, scenario 3 (kill during sync): ZOOKEEPER-3911, 4643, 4646,
// 4685, 2872).
//
// The code marks a point with Hit(name). In a release build Hit is an
// empty function the compiler removes. In a build with the chaos tag,
// Hit looks the name up among the rules armed by Load and, when one
// matches, carries out its action: kill (the process ends at once, as a
// crash: cmd/keeper sends itself SIGKILL), sleep=D, or panic. The fault
// file of a chaos build of keeper (KEEPER_FAULTS_FILE) arms them with
// lines such as
//
//	failpoint name=learner-truncated action=kill
//	failpoint name=log-appended-before-fsync action=kill after=3
//	failpoint name=snap-before-rename action=sleep=200ms count=1
//
// after=N lets the first N hits pass; count=N fires at most N times (by
// default every hit after those fires). Loading replaces every armed rule
// and restarts the counts; loading no line disarms them all.
//
// The package is pure (tier 0): ending or pausing the process is the
// binary's business, installed with SetActions. Every name a Hit uses is
// one of the constants below, and Load refuses any other, so the harness
// and the code agree on them.
package failpoint

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The failpoints, named after what has just happened when they are hit.
// Epoch files, snapshots and log records are durable (fsynced) when the
// name does not say otherwise.
const (
	// CurrentEpochWritten: the currentEpoch file was just replaced
	// (coordination/server/quorumlog.go). A learner writes it in the batch that
	// acknowledges NEWLEADER, after that batch's truncation, snapshot and
	// synced txns are durable and before the ACK leaves (were it written
	// first, a learner whose currentEpoch is newer than its log could win
	// an election and truncate committed txns elsewhere:
	// ZOOKEEPER-4643/4646); a leader writes it once a quorum acknowledged
	// its epoch.
	CurrentEpochWritten = "current-epoch-written"
	// LearnerSnapReceived: a learner decoded the leader's SNAP in memory;
	// nothing of it is on disk yet (peer).
	LearnerSnapReceived = "learner-snap-received"
	// LearnerSnapWritten: the leader's snapshot is this learner's newest
	// snapshot file, and its log still holds what it logged after the
	// snapshot's zxid (coordination/server/quorumlog.go).
	LearnerSnapWritten = "learner-snap-written"
	// LearnerTruncated: a learner cut its log at the leader's TRUNC and has
	// neither rebuilt its state nor logged the txns that follow (peer).
	LearnerTruncated = "learner-truncated"
	// LogAppendedBeforeFsync: txns of a Zab batch went to the log but are
	// not fsynced; no ACK for them has left (peer).
	LogAppendedBeforeFsync = "log-appended-before-fsync"
	// LearnerNewLeaderAcked: a learner handed its ACK of NEWLEADER to the
	// transport. keeper sends it only after the synced txns are fsynced,
	// so no moment "after the ACK, before the fsync" (ZOOKEEPER-3911)
	// exists: this is the one right after the ACK (peer).
	LearnerNewLeaderAcked = "learner-newleader-acked"
	// LeaderDiffSent, LeaderTruncSent and LeaderSnapSent: a leader handed
	// the start of a learner's sync — DIFF, TRUNC, or SNAP with the
	// snapshot — and what follows it to the transport, which is still
	// writing it: a crash here cuts the learner off in the middle of
	// receiving its sync, a SNAP's snapshot perhaps half read (peer). The
	// chaos harness also arms them with a short sleep, to learn from the
	// leader's log which sync a learner got.
	LeaderDiffSent  = "leader-diff-sent"
	LeaderTruncSent = "leader-trunc-sent"
	LeaderSnapSent  = "leader-snap-sent"
	// LeaderNewLeaderSent: a leader handed a learner's sync and NEWLEADER
	// to the transport (peer).
	LeaderNewLeaderSent = "leader-newleader-sent"
	// SnapBeforeRename: a snapshot's temporary file is written and fsynced
	// but not renamed to its final name (snap; a learner's SNAP install
	// and the periodic snapshot alike).
	SnapBeforeRename = "snap-before-rename"
	// SnapRenamedBeforeDirSync: the snapshot was renamed to its final name
	// and the directory is not fsynced yet (snap).
	SnapRenamedBeforeDirSync = "snap-renamed-before-dir-sync"
)

// Names lists every failpoint, in the order of a learner's sync.
var Names = []string{
	LeaderDiffSent, LeaderTruncSent, LeaderSnapSent, LeaderNewLeaderSent, LearnerSnapReceived, SnapBeforeRename, SnapRenamedBeforeDirSync,
	LearnerSnapWritten, LearnerTruncated, CurrentEpochWritten, LogAppendedBeforeFsync, LearnerNewLeaderAcked,
}

// Action is what a failpoint does when it fires.
type Action uint8

// Actions.
const (
	// Kill ends the process at once, as a crash would.
	Kill Action = iota + 1
	// Sleep pauses the goroutine that hit the point for Rule.Sleep.
	Sleep
	// Panic panics in the goroutine that hit the point.
	Panic
)

func (a Action) String() string {
	switch a {
	case Kill:
		return "kill"
	case Sleep:
		return "sleep"
	case Panic:
		return "panic"
	}
	return fmt.Sprintf("Action(%d)", a)
}

// Rule arms one failpoint.
type Rule struct {
	Name   string
	Action Action
	// Sleep is how long a Sleep action pauses.
	Sleep time.Duration
	// After is how many hits pass before the rule fires.
	After int
	// Count bounds how many times it fires; 0 means no bound.
	Count int
}

// String is the rule as a fault-file line.
func (r Rule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "failpoint name=%s action=%s", r.Name, r.Action)
	if r.Action == Sleep {
		fmt.Fprintf(&b, "=%s", r.Sleep)
	}
	if r.After > 0 {
		fmt.Fprintf(&b, " after=%d", r.After)
	}
	if r.Count > 0 {
		fmt.Fprintf(&b, " count=%d", r.Count)
	}
	return b.String()
}

// ErrSyntax marks a line Parse cannot read.
var ErrSyntax = errors.New("failpoint: bad rule")

// Parse reads one fault-file line: the word "failpoint", then name=,
// action= (kill, panic, or sleep=<Go duration>), and optionally after=N
// and count=N, in any order.
func Parse(line string) (Rule, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "failpoint" {
		return Rule{}, fmt.Errorf("%w: %q does not start with \"failpoint\"", ErrSyntax, line)
	}
	var r Rule
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		key, val, ok := strings.Cut(f, "=")
		if !ok || val == "" || seen[key] {
			return Rule{}, fmt.Errorf("%w: %q in %q is not a new key=value", ErrSyntax, f, line)
		}
		seen[key] = true
		if err := r.set(key, val); err != nil {
			return Rule{}, fmt.Errorf("%w: %q: %v", ErrSyntax, line, err)
		}
	}
	switch {
	case r.Name == "":
		return Rule{}, fmt.Errorf("%w: %q names no failpoint", ErrSyntax, line)
	case r.Action == 0:
		return Rule{}, fmt.Errorf("%w: %q has no action", ErrSyntax, line)
	}
	return r, nil
}

// set reads one key=value of a rule.
func (r *Rule) set(key, val string) error {
	switch key {
	case "name":
		if !slices.Contains(Names, val) {
			return fmt.Errorf("unknown failpoint %q (known: %s)", val, strings.Join(Names, ", "))
		}
		r.Name = val
	case "action":
		return r.setAction(val)
	case "after", "count":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q is not a count", key, val)
		}
		if key == "after" {
			r.After = n
		} else {
			r.Count = n
		}
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return nil
}

func (r *Rule) setAction(val string) error {
	what, arg, hasArg := strings.Cut(val, "=")
	switch {
	case what == "kill" && !hasArg:
		r.Action = Kill
	case what == "panic" && !hasArg:
		r.Action = Panic
	case what == "sleep" && hasArg:
		d, err := time.ParseDuration(arg)
		if err != nil || d <= 0 {
			return fmt.Errorf("sleep=%q is not a positive duration", arg)
		}
		r.Action, r.Sleep = Sleep, d
	default:
		return fmt.Errorf("unknown action %q (kill, panic, sleep=<duration>)", val)
	}
	return nil
}

// ParseLines reads every non-blank line that is not a # comment.
func ParseLines(lines []string) ([]Rule, error) {
	var rules []Rule
	for _, line := range lines {
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		r, err := Parse(line)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// Actions are how a fired failpoint acts on the process; the binary
// installs them (cmd/keeper, in a chaos build). Without them Kill panics
// and Sleep does nothing.
type Actions struct {
	// Kill must end the process at once, as a crash would, and not return.
	Kill func(name string)
	// Sleep pauses the caller for d.
	Sleep func(name string, d time.Duration)
}
