package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/jute"
	"keeper/coordination/server"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/testhost"
	"keeper/internal/vfs"
)

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// toolServer runs a server keeping its data in dir, with snapshots every
// ~20 txns and small log files.
func toolServer(t *testing.T, dir string) *server.Server {
	t.Helper()
	cfg := server.Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig()}
	cfg.Core.ExtendedTypes = true
	cfg.Storage = server.StorageConfig{DataDir: dir, PreAllocSizeBytes: 64 << 10, SnapCount: 20}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// toolData writes a data directory with every kind of txn, several log
// files and snapshots, and returns it with the server closed.
func toolData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := toolServer(t, dir)
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	open := zk.WorldACL(zk.PermAll)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create("/a", []byte("hello"), 0, open))
	must(c.Create("/nul", nil, 0, open))
	must(c.Create("/e", []byte("x"), zk.FlagEphemeral, open))
	must(c.CreateContainer("/cont", nil, zk.FlagContainer, open))
	must(c.Create("/cont/kid", nil, 0, open))
	must(c.CreateTTL("/ttl", []byte("t"), zk.FlagTTL, open, time.Hour))
	must(c.Multi(&zk.CreateRequest{Path: "/m", Data: []byte("1"), Acl: open}, &zk.SetDataRequest{Path: "/a", Data: []byte("there"), Version: 0}))
	must(c.SetACL("/a", append(zk.DigestACL(zk.PermAll, "bob", "pw"), zk.WorldACL(zk.PermRead)...), -1))
	must(nil, c.Delete("/nul", -1))
	must(c.Create("/n", nil, 0, open))
	for i := range 100 {
		must(c.Create(fmt.Sprintf("/n/%d", i), []byte(fmt.Sprint(i)), 0, open))
	}
	c.Close() // a closeSession txn deleting /e
	// More rounds until there are four snapshots and three log files: a
	// snapshot becomes due only while none is running, and writes can
	// outpace snapshots.
	enough := func() bool {
		infos, _ := snap.List(vfs.Default, filepath.Join(dir, "version-2"))
		logs, _ := txnlog.Files(vfs.Default, dir)
		return len(infos) >= 4 && len(logs) >= 3
	}
	for round := 0; !enough(); round++ {
		if round == 50 {
			t.Fatal("too few snapshots or log files after 50 rounds of writes")
		}
		more, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			must(more.Create(fmt.Sprintf("/n/r%d-%d", round, i), nil, 0, open))
		}
		more.Close()
		poll(t, "the snapshot in progress", func() bool { return !snapshotRunning(dir) })
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// poll calls cond every few milliseconds until it holds, failing the test
// after ten seconds times testhost.Timescale.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(testhost.Scale(10 * time.Second))
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// snapshotRunning reports whether a snapshot is being written in dir.
func snapshotRunning(dir string) bool {
	names, _ := vfs.Default.List(filepath.Join(dir, "version-2"))
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			return true
		}
	}
	return false
}

// runTool runs `keeper tool --utc args...` and returns its output.
func runTool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"tool", "--utc"}, args...))
	err := root.Execute()
	return out.String(), err
}

func mustRunTool(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runTool(t, args...)
	if err != nil {
		t.Fatalf("keeper tool %v: %v\n%s", args, err, out)
	}
	return out
}

// logFiles lists the log files of the data directory dir.
func logFiles(t *testing.T, dir string) []txnlog.File {
	t.Helper()
	files, err := txnlog.Files(vfs.Default, dir)
	if err != nil || len(files) < 3 {
		t.Fatalf("log files: %v %v (the test needs at least 3)", files, err)
	}
	return files
}

// recordStarts returns where each record of a log file starts, and where
// its data ends.
func recordStarts(t *testing.T, path string) ([]int64, int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	off := int64(txnlog.FileHeaderBytes)
	for off+12 <= int64(len(data)) {
		n := int64(binary.BigEndian.Uint32(data[off+8:]))
		if n == 0 {
			break
		}
		offs = append(offs, off)
		off += txnlog.RecordOverheadBytes + n
	}
	return offs, off
}

// patch writes b at off in the file at path.
func patch(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// flip inverts the lowest bit of the byte at off.
//
// One bit, never more: Adler-32, the snapshot's and the log's checksum,
// misses some changes of several bytes (bit 0 flipped in four bytes whose
// low bits read 0110 or 1001 leaves it as it was, one fixture in eight),
// but no change of a single byte.
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	patch(t, path, off, []byte{data[off] ^ 1})
}

func TestToolTxnlogVerify(t *testing.T) {
	dir := toolData(t)
	files := logFiles(t, dir)
	out := mustRunTool(t, "txnlog", "verify", dir)
	for _, f := range files {
		if !regexp.MustCompile(regexp.QuoteMeta(f.Path) + `: \d+ txns, zxids 0x[0-9a-f]+-0x[0-9a-f]+, data ends at offset \d+`).MatchString(out) {
			t.Fatalf("no line for %s:\n%s", f.Path, out)
		}
	}
	if !regexp.MustCompile(fmt.Sprintf(`log OK: %d files, \d+ txns, zxids 0x1-0x`, len(files))).MatchString(out) {
		t.Fatalf("no summary:\n%s", out)
	}
	// The version-2 directory is accepted too.
	mustRunTool(t, "txnlog", "verify", filepath.Join(dir, "version-2"))

	t.Run("torn tail", func(t *testing.T) {
		dir := toolData(t)
		last := logFiles(t, dir)
		path := last[len(last)-1].Path
		_, end := recordStarts(t, path)
		patch(t, path, end, append(binary.BigEndian.AppendUint32([]byte{0, 0, 0, 0, 1, 2, 3, 4}, 50), 9, 9, 9))
		out := mustRunTool(t, "txnlog", "verify", dir)
		if want := fmt.Sprintf("torn tail in %s at offset %d", path, end); !strings.Contains(out, want) || !strings.Contains(out, "repairable") {
			t.Fatalf("want %q, repairable:\n%s", want, out)
		}
	})
	t.Run("bit flip", func(t *testing.T) {
		dir := toolData(t)
		path := logFiles(t, dir)[0].Path
		offs, _ := recordStarts(t, path)
		flip(t, path, offs[3]+12+20)
		out, err := runTool(t, "txnlog", "verify", dir)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", offs[3])) {
			t.Fatalf("err = %v, want one naming %s at offset %d\n%s", err, path, offs[3], out)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		dir := toolData(t)
		files := logFiles(t, dir)
		if err := os.Remove(files[1].Path); err != nil {
			t.Fatal(err)
		}
		_, err := runTool(t, "txnlog", "verify", dir)
		if err == nil || !strings.Contains(err.Error(), "txns missing") || !strings.Contains(err.Error(), files[2].Path) {
			t.Fatalf("err = %v, want txns missing before %s", err, files[2].Path)
		}
	})
}

func TestToolTxnlogDump(t *testing.T) {
	dir := toolData(t)
	out := mustRunTool(t, "txnlog", "dump", dir)
	head := `\d+/\d+/\d\d, \d+:\d\d:\d\d [AP]M UTC session 0x[0-9a-f]+ cxid 0x[0-9a-f]+ zxid `
	for _, want := range []string{
		head + `0x1 createSession 10000`,
		head + `0x2 create /a,"hello",\[world:anyone:cdrwa\],false,1`,
		head + `0x3 create /nul,null,\[world:anyone:cdrwa\],false,2`,
		head + `0x4 create /e,"x",\[world:anyone:cdrwa\],true,3`,
		head + `0x5 createContainer /cont,null,\[world:anyone:cdrwa\],4`,
		head + `0x7 createTtl /ttl,"t",\[world:anyone:cdrwa\],5,3600000`,
		head + `0x8 multi \[create /m,"1",\[world:anyone:cdrwa\],false,6; setData /a,"there",1\]`,
		head + `0x9 setACL /a,\[digest:bob:[^:]+:cdrwa,world:anyone:r\],1`,
		head + `0xa delete /nul`,
		head + `0x[0-9a-f]+ closeSession \[/e\]`,
		`(?m)^# ` + regexp.QuoteMeta(filepath.Join(dir, "version-2", "log.1")) + ` \(log format version 2\)$`,
		`end of log after \d+ txns`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("dump:\n%s", out)
	}

	from := mustRunTool(t, "txnlog", "dump", dir, "--from", "0x9")
	lines := strings.Split(from, "\n")
	if !strings.Contains(lines[1], " zxid 0x9 setACL ") {
		t.Fatalf("dump --from 0x9 starts with %q", lines[1])
	}
	files := logFiles(t, dir)
	one := mustRunTool(t, "txnlog", "dump", files[1].Path)
	if strings.Contains(one, files[0].Path+" (") || strings.Contains(one, files[2].Path+" (") ||
		!strings.Contains(one, fmt.Sprintf(" zxid %v ", files[1].Start)) {
		t.Fatalf("dump of %s alone:\n%s", files[1].Path, one)
	}
}

func TestToolTxnlogTruncate(t *testing.T) {
	dir := toolData(t)
	files := logFiles(t, dir)
	z := files[1].Start + 2
	out, err := runTool(t, "txnlog", "truncate", dir, "--zxid", z.String())
	if err == nil || !strings.Contains(err.Error(), "--yes") {
		t.Fatalf("truncate without --yes: %v", err)
	}
	if !strings.Contains(out, "remove "+files[2].Path) || !strings.Contains(out, "keep "+files[1].Path) {
		t.Fatalf("plan does not name the files:\n%s", out)
	}
	if again := logFiles(t, dir); len(again) != len(files) {
		t.Fatalf("truncate without --yes changed the log: %v", again)
	}
	out = mustRunTool(t, "txnlog", "truncate", dir, "--zxid", z.String(), "--yes")
	if !strings.Contains(out, "(it holds txns after") {
		t.Fatalf("no snapshot after %v was removed:\n%s", z, out)
	}
	verify := mustRunTool(t, "txnlog", "verify", dir)
	if !strings.Contains(verify, fmt.Sprintf("-%v\n", z)) {
		t.Fatalf("log does not end at %v:\n%s", z, verify)
	}
	infos, err := snap.List(vfs.Default, filepath.Join(dir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Zxid > z {
			t.Fatalf("snapshot %s is still there", info.Name)
		}
	}
	// A server restarts on what is left, at exactly z.
	s := toolServer(t, dir)
	var last zxid.ID
	s.Inspect(func(core *zkcore.Server) { last = core.LastZxid() })
	if last != z {
		t.Fatalf("restarted at %v, want %v", last, z)
	}
}

func TestToolSnapshotVerify(t *testing.T) {
	dir := toolData(t)
	infos, err := snap.List(vfs.Default, filepath.Join(dir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	out := mustRunTool(t, "snapshot", "verify", dir)
	for _, info := range infos {
		re := regexp.QuoteMeta(info.Name) + `: OK: zxid 0x[0-9a-f]+, \d+ nodes, [01] sessions, digest -?\d+ (at zxid 0x[0-9a-f]+ matches after replaying the log|matches the tree)`
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("no OK line for %s:\n%s", info.Name, out)
		}
	}
	if !strings.Contains(out, "a restart loads "+infos[0].Name) {
		t.Fatalf("no restart line:\n%s", out)
	}
	single := mustRunTool(t, "snapshot", "verify", filepath.Join(dir, "version-2", infos[1].Name))
	if !strings.Contains(single, ": OK: ") {
		t.Fatalf("single file:\n%s", single)
	}

	path := filepath.Join(dir, "version-2", infos[0].Name)
	flip(t, path, infos[0].Size/2)
	out, err = runTool(t, "snapshot", "verify", dir)
	if err == nil || !strings.Contains(out, infos[0].Name+": DAMAGED: snap: corrupt snapshot") ||
		!strings.Contains(out, "a restart loads "+infos[1].Name) {
		t.Fatalf("err = %v, output:\n%s", err, out)
	}
}

func TestToolSnapshotDump(t *testing.T) {
	dir := toolData(t)
	infos, err := snap.List(vfs.Default, filepath.Join(dir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "version-2", infos[0].Name)
	out := mustRunTool(t, "snapshot", "dump", path)
	for _, want := range []string{
		`^ZNode Details \(count=\d+\):\n----\n/\n  cZxid = 0x00000000000000\n  ctime = Thu Jan 01 00:00:00 UTC 1970\n`,
		`\n/a\n  cZxid = 0x00000000000002\n  ctime = \w{3} \w{3} \d\d \d\d:\d\d:\d\d UTC \d{4}\n  mZxid = 0x00000000000008\n` +
			`  mtime = .*\n  pZxid = 0x00000000000002\n  cversion = 0\n  dataVersion = 1\n  aclVersion = 1\n` +
			`  ephemeralOwner = 0x00000000000000\n  dataLength = 5\n----\n`,
		`\n/cont\n(  .*\n){8}  ephemeralOwner = 0x8000000000000000\n`,
		`\n/ttl\n(  .*\n){8}  ephemeralOwner = 0xff0000000036ee80\n`,
		`\nSession Details \(sid, timeout, ephemeralCount\):\n(0x[0-9a-f]+, \d+, \d+\n)*----\nLast zxid: 0x[0-9a-f]+\nDigest: -?\d+ at zxid 0x[0-9a-f]+ \(version 2\)\n$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no match for %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("dump:\n%s", out)
	}
	data := mustRunTool(t, "snapshot", "dump", "--data", path)
	want := "\n/a\n" + `(  .*\n){9}` + regexp.QuoteMeta("  data = "+base64.StdEncoding.EncodeToString([]byte("there"))+"\n  acl = [digest:bob:")
	if !regexp.MustCompile(want).MatchString(data) {
		t.Fatalf("dump --data has no data and ACL for /a:\n%s", data)
	}
}

func TestToolPurge(t *testing.T) {
	dir := toolData(t)
	if _, err := runTool(t, "purge", dir, "-n", "2"); err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Fatalf("purge -n 2: %v", err)
	}
	before, err := snap.List(vfs.Default, filepath.Join(dir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	out := mustRunTool(t, "purge", dir, "-n", "3")
	after, err := snap.List(vfs.Default, filepath.Join(dir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 || after[0] != before[0] || after[2] != before[2] {
		t.Fatalf("kept %v of %v", after, before)
	}
	if !strings.Contains(out, "removed "+filepath.Join(dir, "version-2", before[3].Name)) ||
		!regexp.MustCompile(`removed \d+ snapshots and \d+ log files; 3 snapshots and \d+ log files remain`).MatchString(out) {
		t.Fatalf("purge output:\n%s", out)
	}
	// Of the logs left, exactly one starts at or before the oldest kept
	// snapshot: the one holding the txns right after it.
	logs, err := txnlog.Files(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 || logs[0].Start > after[2].Zxid || (len(logs) > 1 && logs[1].Start <= after[2].Zxid) {
		t.Fatalf("logs left %v for the oldest kept snapshot %s", logs, after[2].Name)
	}
	// Everything the kept snapshots need is there: a restart from the
	// oldest one alone works.
	for _, info := range after[:2] {
		if err := os.Remove(filepath.Join(dir, "version-2", info.Name)); err != nil {
			t.Fatal(err)
		}
	}
	mustRunTool(t, "txnlog", "verify", dir)
	toolServer(t, dir)
}

func TestParseZxid(t *testing.T) {
	tests := []struct {
		in   string
		want zxid.ID
		ok   bool
	}{
		{"0x1a", 0x1a, true},
		{"0X100000001", 0x100000001, true},
		{"26", 26, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"0x", 0, false},
		{"1a", 0, false},
		{"0xffffffffffffffff", 0, false}, // negative as a signed zxid
	}
	for _, tc := range tests {
		got, err := parseZxid(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseZxid(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestRecordFields(t *testing.T) {
	tests := []struct {
		rec  jute.Record
		want string
	}{
		{&txn.CreateSession{TimeoutMs: 30000}, "30000"},
		{&txn.CloseSession{NoBody: true}, ""},
		{&txn.CloseSession{Paths: []string{"/a", "/b"}}, "[/a,/b]"},
		{&txn.Error{Err: -101}, "-101 NoNode"},
		{&txn.SetData{Path: "/a", Data: []byte("x\ny"), Version: 3}, `/a,"x\ny",3`},
		{&txn.CheckVersion{Path: "/a", Version: 2}, "/a,2"},
		{&txn.Multi{Ops: []txn.Op{{Type: zkproto.OpCheck, Record: &txn.CheckVersion{Path: "/a", Version: 1}},
			{Type: zkproto.OpError, Record: &txn.Error{Err: 0}}}}, "[check /a,1; error 0 OK]"},
	}
	for _, tc := range tests {
		if got := recordFields(tc.rec); got != tc.want {
			t.Errorf("recordFields(%#v) = %q, want %q", tc.rec, got, tc.want)
		}
	}
}
