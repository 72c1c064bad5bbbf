package chaos

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Dropping un-synced bytes on a kill (docs/fault-model.md scenarios 2 and
// 10). A SIGKILLed process's page cache survives in the kernel, so a kill
// alone never loses what keeper wrote but had not synced. With
// Config.DropUnsynced, a chaos build keeps written bytes in the process
// until they are synced (internal/vfs/lazyfs), so that a kill drops them, a random
// part of them having reached the disk early (a torn tail); and an fsync
// the kill interrupts is rolled back at the next start to a random prefix
// of what it was writing (lazyfs undo records, kept in the process's
// directory, outside its data). Acknowledged data was synced before the
// acknowledgement, so the checks stay the same: nothing acknowledged may
// be lost; what the fault adds is torn tails the recovery must cut off.

// dropUnsyncedEnv returns the environment that makes a chaos build's
// process in dir lose its un-synced bytes on a kill; nil unless
// c.DropUnsynced.
func (c Config) dropUnsyncedEnv(dir string) []string {
	if !c.DropUnsynced {
		return nil
	}
	return []string{"KEEPER_DROP_UNSYNCED=1", "KEEPER_DROP_UNSYNCED_UNDO=" + filepath.Join(dir, "lazyfs-undo")}
}

// tornTailLines are the messages of a recovery that cut a torn tail off a
// file: the server's txn log, the bookie's journal and entry logs.
var tornTailLines = []string{
	"truncated a torn record at the end of the log", // coordination/server/storage.go
	"cut torn tail off txn log",                     // txnlog.Open (an ensemble member)
	"cutting torn tail off journal",                 // ledgerstore/bookie/journal
	"cutting torn tail of entry log",                // ledgerstore/bookie/entrystore
	"removing entry log with a torn header",         // ledgerstore/bookie/entrystore
}

var undoneRE = regexp.MustCompile(`rolled back syncs a kill interrupted.* undone=(\d+) torn=(\d+)`)

// DropFigures is what the logs of processes run with DropUnsynced say
// the fault did.
type DropFigures struct {
	// Repaired counts the torn tails recoveries cut off.
	Repaired int
	// Undone counts the syncs a kill interrupted that lazyfs rolled back
	// at the next start, Torn those of them left with a torn write.
	Undone, Torn int
}

// CountDrops reads the logs matching the glob patterns.
func CountDrops(patterns ...string) DropFigures {
	var f DropFigures
	for _, pat := range patterns {
		names, _ := filepath.Glob(pat)
		for _, name := range names {
			f.add(name)
		}
	}
	return f
}

func (f *DropFigures) add(name string) {
	file, err := os.Open(name)
	if err != nil {
		return
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, msg := range tornTailLines {
			if strings.Contains(line, msg) {
				f.Repaired++
			}
		}
		if m := undoneRE.FindStringSubmatch(line); m != nil {
			undone, _ := strconv.Atoi(m[1])
			torn, _ := strconv.Atoi(m[2])
			f.Undone += undone
			f.Torn += torn
		}
	}
}

// Report sets the figure torn-tails-repaired=N(syncs-undone=U,torn=T).
func (f DropFigures) Report(rep *Report) {
	rep.Figure("torn-tails-repaired", "%d(syncs-undone=%d,torn=%d)", f.Repaired, f.Undone, f.Torn)
}

// serverDrops counts the fault's effects in every server log of cl.
func serverDrops(cl *Cluster) DropFigures {
	var pats []string
	for _, s := range cl.Servers {
		pats = append(pats, filepath.Join(s.Dir, "keeper-run*.log"))
	}
	return CountDrops(pats...)
}

// bookieDrops counts the fault's effects in every bookie log of bs.
func bookieDrops(bs *Bookies) DropFigures {
	var pats []string
	for _, b := range bs.List {
		pats = append(pats, filepath.Join(b.Dir, "bookie-run*.log"))
	}
	return CountDrops(pats...)
}
