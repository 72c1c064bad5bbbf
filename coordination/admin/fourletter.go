package admin

import (
	"slices"
	"strconv"

	"keeper/coordination/zkcore"
)

// fourLetterRun runs a word that needs the core. ok is false if the server
// is not serving.
type fourLetterRun func(a *Admin, self zkcore.ConnID) (out []byte, ok bool)

// serverWords are the words that answer "not currently serving" once the
// core stops. ruok, envi, gtmk and stmk answer regardless, as in ZooKeeper.
var serverWords = map[string]fourLetterRun{
	"srvr": func(a *Admin, self zkcore.ConnID) ([]byte, bool) { return a.srvr(false, self) },
	"stat": func(a *Admin, self zkcore.ConnID) ([]byte, bool) { return a.srvr(true, self) },
	"cons": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.cons() },
	"mntr": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.mntr() },
	"dump": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.dump() },
	"hash": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.hash() },
	"wchs": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.watchText(watchSummary) },
	"wchc": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.watchText(watchByConn) },
	"wchp": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.watchText(watchByPath) },
	"crst": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) {
		return []byte("Connection stats reset.\n"), a.core.Inspect((*zkcore.Server).ResetConnStats)
	},
	"srst": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) {
		return []byte("Server stats reset.\n"), a.core.Inspect((*zkcore.Server).ResetStats)
	},
	"conf": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.conf(), a.serving() },
	"dirs": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) { return a.dirs(), a.serving() },
	"isro": func(a *Admin, _ zkcore.ConnID) ([]byte, bool) {
		if a.state() == "read-only" {
			return []byte("ro"), a.serving()
		}
		return []byte("rw"), a.serving()
	},
}

// FourLetter answers the four-letter word cmd (docs/zookeeper-protocol.md §8) asked on
// connection self (0 if none); arg is stmk's new trace mask. It returns the
// text to write before closing the connection, or nil for a word it does
// not know.
//
// A word outside the whitelist gets "<cmd> is not executed because it is
// not in the whitelist.". Once the core has stopped, words that need it
// answer "This ZooKeeper instance is not currently serving requests" (isro
// answers "null").
func (a *Admin) FourLetter(cmd string, self zkcore.ConnID, arg int64) []byte {
	if !a.whitelisted(cmd) {
		a.log.Debug("four-letter word not in whitelist", "cmd", cmd, "conn", self)
		return []byte(cmd + " is not executed because it is not in the whitelist.\n")
	}
	a.log.Debug("four-letter word", "cmd", cmd, "conn", self)
	switch cmd {
	case "ruok":
		return []byte("imok")
	case "envi":
		return a.envi()
	case "gtmk":
		return strconv.AppendInt(nil, a.TraceMask(), 10)
	case "stmk":
		a.traceMask.Store(arg)
		return strconv.AppendInt(nil, arg, 10)
	}
	run, known := serverWords[cmd]
	if !known {
		return nil
	}
	// An ensemble member without a leader answers as a stopped server.
	var out []byte
	ok := false
	if a.state() != "" {
		out, ok = run(a, self)
	}
	if ok {
		return out
	}
	switch cmd {
	case "isro":
		return []byte("null")
	case "hash":
		return []byte(notServing) // ZooKeeper prints this one without a newline
	}
	return []byte(notServing + "\n")
}

// whitelisted reports whether cmd may run.
func (a *Admin) whitelisted(cmd string) bool {
	w := a.cfg.FourLetterWhitelist
	return slices.Contains(w, "*") || slices.Contains(w, cmd)
}

// serving reports whether the core still runs.
func (a *Admin) serving() bool {
	return a.state() != "" && a.core.Inspect(func(*zkcore.Server) {})
}
