package main

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"keeper/coordination/server"
	"keeper/coordination/txnlog"
	"keeper/internal/vfs"
)

func newToolRecoverCmd(flags *toolFlags) *cobra.Command {
	var logArg, aside string
	var yes, member bool
	cmd := &cobra.Command{
		Use:   "recover <dataDir> [--txnlog <dataLogDir>] [--aside NAME] --yes",
		Short: "Keep what a refused data directory accounts for and set the rest aside",
		Long: `For a server that refuses to start because its data directory cannot account
for its data (a damaged snapshot the log does not make up for, a damaged or
missing log). Prints what start-up can account for: the newest usable snapshot
(or the empty tree, when the log begins at the first txn) and the log that
follows it without a gap or damage, and what lies beyond and would be lost.
With --yes it moves every file that holds more into the directory NAME next to
version-2 (by default set-aside-<UTC time>, in the dataDir and, for log files,
in the dataLogDir): the snapshots newer than the state kept, the log files after
it, and a copy of the log file it ends in, which is then cut where the first
record not kept starts. Nothing is deleted. The server then starts with the
state kept. It takes the directories' lock, so no server may be running on them.

An ensemble member (with acceptedEpoch or currentEpoch files) is refused unless
--member is given: started from an older state, it would vote without txns it
may have acknowledged. Start it with snapshot.trust.empty=true instead, which
sets its files aside and makes it rejoin through the leader's snapshot; use
--member only when no member of the ensemble has the data. See
docs/storage-recovery.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.env(cmd).recoverData(args[0], logArg, aside, yes, member)
		},
	}
	cmd.Flags().StringVar(&logArg, "txnlog", "", "the dataLogDir, when it is not the dataDir")
	cmd.Flags().StringVar(&aside, "aside", "", "the directory to move files into, created next to version-2 (default set-aside-<UTC time>)")
	cmd.Flags().BoolVar(&yes, "yes", false, "really move the files")
	cmd.Flags().BoolVar(&member, "member", false, "recover an ensemble member's directory all the same")
	return cmd
}

// recoverData prints the recovery plan for a data directory and, with yes,
// carries it out.
func (e *toolEnv) recoverData(dataArg, logArg, aside string, yes, member bool) error {
	dataDir, err := dataDirOf(e.fs, dataArg)
	if err != nil {
		return err
	}
	logDir := dataDir
	if logArg != "" {
		if logDir, err = dataDirOf(e.fs, logArg); err != nil {
			return err
		}
	}
	if yes { // locked before the plan is made, so that the plan is what runs
		lock, err := vfs.LockDirs(e.fs, dataDir, logDir)
		if err != nil {
			return err
		}
		defer lock.Close() // releasing the lock loses nothing
	}
	plan, err := server.PlanRecovery(e.fs, dataDir, logDir, e.maxRecordBytes)
	if err != nil {
		return err
	}
	e.printPlan(plan)
	if plan.Empty() {
		if plan.NoBase {
			return errors.New("nothing can be kept and nothing is left to set aside; " +
				"snapshot.trust.empty=true starts the server with an empty tree")
		}
		e.printf("nothing to set aside: the server starts with everything above\n")
		return nil
	}
	if len(plan.Epochs) > 0 && !member {
		return errors.New("this is an ensemble member's directory: start it with snapshot.trust.empty=true " +
			"to rejoin through the leader's snapshot, or give --member if no member has the data")
	}
	if !yes {
		return errors.New("refusing to change the files without --yes")
	}
	if aside == "" {
		aside = server.SetAsideName(time.Now())
	}
	dirs, err := plan.Apply(e.fs, aside)
	for _, dir := range dirs {
		e.printf("moved into %s\n", dir)
	}
	if err != nil {
		return err
	}
	if plan.NoBase {
		e.printf("the data directory holds no snapshot or log now: the server starts with an empty tree\n")
	} else {
		e.printf("the server starts with the state up to zxid %v\n", plan.Kept)
	}
	return nil
}

// printPlan says what a recovery keeps, what it sets aside and what is lost.
func (e *toolEnv) printPlan(p *server.RecoveryPlan) {
	snapDir := filepath.Join(p.DataDir, txnlog.DirName)
	switch {
	case p.NoBase:
		e.printf("nothing can be kept: %s\n", p.Stop)
	case p.Base == "":
		e.printf("keep: the empty tree and the log from the first txn, up to zxid %v\n", p.Kept)
	default:
		e.printf("keep: %s (zxid %v) and the log after it, up to zxid %v\n", filepath.Join(snapDir, p.Base), p.BaseZxid, p.Kept)
	}
	if !p.NoBase && p.Stop != "" {
		e.printf("the log stops being usable there: %s\n", p.Stop)
	}
	for _, sk := range p.Unusable {
		e.printf("set aside %s: %v\n", filepath.Join(snapDir, sk.Info.Name), sk.Err)
	}
	if p.CutLog != "" {
		e.printf("copy aside %s, then cut it at offset %d\n", p.CutLog, p.CutOffset)
	}
	for _, path := range p.SetAsideLogs {
		e.printf("set aside %s\n", path)
	}
	switch {
	case p.NoBase:
		e.printf("lost: every txn\n")
	case p.Named > p.Kept:
		e.printf("lost: every txn after zxid %v; the file names show the directory held at least up to zxid %v\n", p.Kept, p.Named)
	case p.Stop != "":
		e.printf("lost: every txn after zxid %v\n", p.Kept)
	}
	for _, path := range p.Epochs {
		e.printf("ensemble member: %s stays\n", path)
	}
}
