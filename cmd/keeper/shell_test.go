package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
)

var zkcliFlag = flag.String("zkcli", "",
	"path of Apache ZooKeeper's zkCli.sh: rewrite testdata/shell/*.golden from what it prints")

// startShellServer runs an in-process server whose session ids do not
// depend on the clock, so that ephemeralOwner lines are the same on every
// run.
func startShellServer(t *testing.T) string {
	t.Helper()
	cfg := server.Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig()}
	cfg.Core.ExtendedTypes = true
	cfg.Core.EnforceQuota = true
	cfg.Core.StartWallMs = 1_700_000_000_000
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// runScript feeds script to the shell's stdin and returns what it prints,
// stdout and stderr interleaved, as zkCli's output with 2>&1.
func runScript(t *testing.T, addr string, script []byte) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := runShell(context.Background(), shellOptions{server: addr, timeout: 30 * time.Second},
		nil, bytes.NewReader(withServer(script, addr)), &out, &out)
	return out.String(), code
}

// TestShellGolden runs each testdata/shell/*.script through the shell and
// compares the output with the .golden file next to it, which holds what
// Apache ZooKeeper 3.8's zkCli.sh printed for the same script against a
// keeper server. To rewrite the golden files (and review the diff):
//
//	go test ./cmd/keeper -run TestShellGolden -zkcli=/usr/share/zookeeper/bin/zkCli.sh
//
// zkcliDeviations lists where the shell differs from zkCli on purpose.
func TestShellGolden(t *testing.T) {
	scripts, err := filepath.Glob("testdata/shell/*.script")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range scripts {
		name := strings.TrimSuffix(filepath.Base(path), ".script")
		t.Run(name, func(t *testing.T) {
			script, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			goldenPath := strings.TrimSuffix(path, ".script") + ".golden"
			if *zkcliFlag != "" {
				addr := startShellServer(t)
				if err := os.WriteFile(goldenPath, []byte(normalizeOutput(runZkCli(t, addr, script), addr)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatal(err)
			}
			addr := startShellServer(t)
			got, _ := runScript(t, addr, script)
			if want := applyDeviations(string(golden)); normalizeOutput(got, addr) != want {
				t.Errorf("output differs from %s (after zkcliDeviations):\n%s", goldenPath,
					lineDiff(want, normalizeOutput(got, addr)))
			}
		})
	}
}

// runZkCli runs the real zkCli.sh with script on stdin.
func runZkCli(t *testing.T, addr string, script []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, *zkcliFlag, "-server", addr)
	cmd.Stdin = bytes.NewReader(withServer(script, addr))
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe keeps zkCli's interleaving
	if err := cmd.Run(); err != nil {
		t.Logf("zkCli exited with %v", err) // a failed last command exits non-zero
	}
	return out.String()
}

// withServer puts the server's address where a script says SERVER.
func withServer(script []byte, addr string) []byte {
	return bytes.ReplaceAll(script, []byte("SERVER"), []byte(addr))
}

var (
	dateLine = regexp.MustCompile(`(?m)^([cm]time) = [A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \S+ \d{4}$`)
	log4jish = regexp.MustCompile(`(?m)^SLF4J: .*\n`)
)

// normalizeOutput removes what differs between runs: the server's port,
// node times (their format is checked here and in TestJavaDate), and the
// JVM's logging noise.
func normalizeOutput(s, addr string) string {
	s = log4jish.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, addr, "SERVER")
	return dateLine.ReplaceAllString(s, "$1 = DATE")
}

// zkcliDeviations are the intended differences from zkCli's output, as
// old -> new replacements applied to the golden text:
var zkcliDeviations = []struct{ old, new, why string }{
	{"Welcome to ZooKeeper!\nJLine support is disabled\n", "",
		"keeper shell prints no banner"},
	{"org.apache.commons.cli.UnrecognizedOptionException: ", "",
		"the Java exception class of a bad option is noise"},
	{"org.apache.commons.cli.MissingArgumentException: ", "",
		"the Java exception class of a missing option value is noise"},
	{"org.apache.commons.cli.MissingOptionException: ", "",
		"the Java exception class of a missing setquota limit is noise"},
	{"org.apache.commons.cli.AlreadySelectedException: ", "",
		"the Java exception class of a second quota limit option is noise"},
	{"29 - history\nNot connected\n", "29 - history\n",
		"zkCli's connect checks the new session before its client has started connecting, and says Not connected"},
}

func applyDeviations(s string) string {
	for _, d := range zkcliDeviations {
		s = strings.ReplaceAll(s, d.old, d.new)
	}
	return s
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			lo, hi := max(0, i-3), min(i+4, max(len(w), len(g)))
			return fmt.Sprintf("line %d:\nwant:\n%s\ngot:\n%s", i+1,
				strings.Join(w[lo:min(hi, len(w))], "\n"), strings.Join(g[lo:min(hi, len(g))], "\n"))
		}
	}
	return "(no difference)"
}

// TestShellOneCommand runs commands non-interactively: results on stdout,
// errors on stderr, and the exit status.
func TestShellOneCommand(t *testing.T) {
	addr := startShellServer(t)
	tests := []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{args: []string{"ls", "/"}, stdout: "[zookeeper]\n"},
		{args: []string{"create", "/a", "x"}, stderr: "Created /a\n"},
		{args: []string{"get", "/a"}, stdout: "x\n"},
		{args: []string{"ls", "-R", "/a"}, stdout: "/a\n"},
		{args: []string{"get", "/none"}, stderr: "Node does not exist: /none\n", code: 1},
		{args: []string{"ls"}, stderr: "ls [-s] [-w] [-R] path\n", code: 1},
		{args: []string{"frob"}, stderr: usageText + "Command not found: frob\n", code: 127},
		{args: []string{"help"}, stdout: usageText},
		{args: []string{"quit"}, stdout: "\nWATCHER::\n\nWatchedEvent state:Closed type:None path:null\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runShell(context.Background(), shellOptions{server: addr, timeout: 10 * time.Second},
				tt.args, strings.NewReader(""), &stdout, &stderr)
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr || code != tt.code {
				t.Fatalf("got stdout %q stderr %q exit %d\nwant stdout %q stderr %q exit %d",
					stdout.String(), stderr.String(), code, tt.stdout, tt.stderr, tt.code)
			}
		})
	}
}

// usageText is what help prints.
const usageText = `keeper shell --server host:port[,host:port...][/chroot] [cmd args]
	addWatch [-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE
	addauth scheme auth
	close 
	config [-c] [-w] [-s]
	connect host:port
	create [-s] [-e] [-c] [-t ttl] path [data] [acl]
	delete [-v version] path
	deleteall path [-b batch size]
	delquota [-n|-b|-N|-B] path
	get [-s] [-w] path
	getAcl [-s] path
	getAllChildrenNumber path
	getEphemerals path
	help 
	history 
	listquota path
	ls [-s] [-w] [-R] path
	printwatches on|off
	quit 
	reconfig [-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | [-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]
	redo cmdno
	removewatches path [-c|-d|-a] [-l]
	set [-s] [-v version] path data
	setAcl [-s] [-v version] [-R] path acl
	setquota -n|-b|-N|-B val path
	stat [-w] path
	sync path
	version 
	whoami 
`

// TestShellCobra goes through the root command, where cobra must leave the
// flags after the shell's first argument to the shell command.
func TestShellCobra(t *testing.T) {
	addr := startShellServer(t)
	var out bytes.Buffer
	root := newRootCmd()
	root.SetArgs([]string{"shell", "--server", addr, "--timeout", "5s", "ls", "-R", "/"})
	root.SetOut(&out)
	root.SetErr(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "/\n/zookeeper\n/zookeeper/config\n/zookeeper/quota\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

func TestShellCannotConnect(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runShell(context.Background(), shellOptions{server: "127.0.0.1:1", timeout: 5 * time.Second},
		[]string{"ls", "/"}, nil, &out, &errOut)
	if code != 1 || !strings.HasPrefix(errOut.String(), "Cannot connect to 127.0.0.1:1: ") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
}

// TestShellExitStatus checks that a script's status is its last command's.
func TestShellExitStatus(t *testing.T) {
	addr := startShellServer(t)
	if _, code := runScript(t, addr, []byte("get /none\nls /\n")); code != 0 {
		t.Errorf("status %d after a good last command", code)
	}
	if _, code := runScript(t, addr, []byte("ls /\nget /none\n")); code != 1 {
		t.Errorf("status %d after a failed last command", code)
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"ls /", []string{"ls", "/"}},
		{"  set\t/a  x  ", []string{"set", "/a", "x"}},
		{`create /a "two words"`, []string{"create", "/a", "two words"}},
		{`create /a 'it is' "x'y"`, []string{"create", "/a", "it is", "x'y"}},
		{`set /a ""`, []string{"set", "/a", ""}},
		{`set /a "unclosed`, []string{"set", "/a", "unclosed"}},
		{`set /a x"y z"`, []string{"set", "/a", `x"y`, `z"`}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := tokenize(tt.line); !slices.Equal(got, tt.want) {
			t.Errorf("tokenize(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		tokens  []string
		spec    string
		flags   flagSet
		args    []string
		wantErr string
	}{
		{[]string{"-s", "/a"}, "sw", flagSet{'s': ""}, []string{"/a"}, ""},
		{[]string{"/a", "-w"}, "sw", flagSet{'w': ""}, []string{"/a"}, ""},
		{[]string{"-sw", "/a"}, "sw", flagSet{'s': "", 'w': ""}, []string{"/a"}, ""},
		{[]string{"-v", "3", "/a", "d"}, "sv:", flagSet{'v': "3"}, []string{"/a", "d"}, ""},
		{[]string{"-sv3", "/a"}, "sv:", flagSet{'s': "", 'v': "3"}, []string{"/a"}, ""},
		{[]string{"--", "-a"}, "s", flagSet{}, []string{"-a"}, ""},
		{[]string{"-", "/a"}, "s", flagSet{}, []string{"-", "/a"}, ""},
		{[]string{"-x", "/a"}, "sw", nil, nil, "Unrecognized option: -x"},
		{[]string{"/a", "-v"}, "v:", nil, nil, "Missing argument for option: v"},
	}
	for _, tt := range tests {
		flags, args, err := parseFlags(tt.tokens, tt.spec)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("parseFlags(%q): err %v, want %q", tt.tokens, err, tt.wantErr)
			}
		case err != nil || fmt.Sprint(flags) != fmt.Sprint(tt.flags) || !slices.Equal(args, tt.args):
			t.Errorf("parseFlags(%q) = %v %q %v, want %v %q", tt.tokens, flags, args, err, tt.flags, tt.args)
		}
	}
}

func TestCheckPath(t *testing.T) {
	tests := []struct {
		path       string
		sequential bool
		want       string // "" for valid
	}{
		{"/", false, ""},
		{"/a/b", false, ""},
		{"/a/", true, ""},
		{"/a.b/..c", false, ""},
		{"", false, "Path length must be > 0"},
		{"a", false, "Path must start with / character"},
		{"/a/", false, "Path must not end with / character"},
		{"/a//b", false, `Invalid path string "/a//b" caused by empty node name specified @3`},
		{"/a/./b", false, `Invalid path string "/a/./b" caused by relative paths not allowed @3`},
		{"/a/..", false, `Invalid path string "/a/.." caused by relative paths not allowed @4`},
		{"/a\x01", false, `Invalid path string "/a\x01" caused by invalid character @2`},
		{"/a\x00b", false, `Invalid path string "/a\x00b" caused by null character not allowed @2`},
		{"/\U0001F600", false, `Invalid path string "/😀" caused by invalid character @1`},
	}
	for _, tt := range tests {
		err := checkPath(tt.path, tt.sequential)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("checkPath(%q, %v) = %q, want %q", tt.path, tt.sequential, got, tt.want)
		}
	}
}

func TestParseACL(t *testing.T) {
	tests := []struct {
		text   string
		want   []zkproto.ACL
		stderr string
	}{
		{"world:anyone:cdrwa", zkproto.OpenACLUnsafe, ""},
		{"digest:u:h=:rw,ip:10.0.0.0/8:r", []zkproto.ACL{
			{Perms: zkproto.PermRead | zkproto.PermWrite, ID: zkproto.ID{Scheme: "digest", ID: "u:h="}},
			{Perms: zkproto.PermRead, ID: zkproto.ID{Scheme: "ip", ID: "10.0.0.0/8"}},
		}, ""},
		{"auth::a,", []zkproto.ACL{{Perms: zkproto.PermAdmin, ID: zkproto.ID{Scheme: "auth"}}}, ""},
		{"world:anyone", []zkproto.ACL{}, "world:anyone does not have the form scheme:id:perm\n"},
		{"world:anyone:rx", []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.ID{Scheme: "world", ID: "anyone"}}},
			"Unknown perm type: x\n"},
		{",", []zkproto.ACL{}, ""},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		s := &shell{errOut: &stderr}
		if got := s.parseACL(tt.text); !slices.Equal(got, tt.want) || stderr.String() != tt.stderr {
			t.Errorf("parseACL(%q) = %+v, stderr %q; want %+v, %q", tt.text, got, stderr.String(), tt.want, tt.stderr)
		}
	}
}

func TestJavaFormats(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	for _, tt := range []struct {
		ms   int64
		loc  *time.Location
		want string
	}{
		{0, time.UTC, "Thu Jan 01 00:00:00 UTC 1970"},
		{1_764_495_480_123, time.UTC, "Sun Nov 30 09:38:00 UTC 2025"},
		{1_764_495_480_123, cet, "Sun Nov 30 10:38:00 CET 2025"},
	} {
		if got := javaDate(tt.ms, tt.loc); got != tt.want {
			t.Errorf("javaDate(%d, %v) = %q, want %q", tt.ms, tt.loc, got, tt.want)
		}
	}
	if got := csvString("a,b}%\n"); got != "'a%2Cb%7D%25%0A" {
		t.Errorf("csvString = %q", got)
	}
	if got := permString(zkproto.PermAll); got != "cdrwa" {
		t.Errorf("permString(all) = %q", got)
	}
	if got := javaString([]byte("ok\xff\xfe")); got != "ok\uFFFD\uFFFD" {
		t.Errorf("javaString = %q", got)
	}
	if got := keeperError(zkproto.Errorf(zkproto.CodeNotEmpty, "/a"), "").Error(); got != "Node not empty: /a" {
		t.Errorf("keeperError(NotEmpty) = %q", got)
	}
	if got := keeperError(zkproto.ErrSessionExpired, "/a").Error(); got != "KeeperErrorCode = Session expired for /a" {
		t.Errorf("keeperError(SessionExpired) = %q", got)
	}
}

// FuzzShellParse feeds arbitrary command lines to the shell's parsers:
// they must never panic.
func FuzzShellParse(f *testing.F) {
	for _, s := range []string{"ls -R /", `create -s -e /a "x y" world:anyone:cdrwa`, "set -v3 /a/../b '", "-:x -- -s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		tokens := tokenize(line)
		for _, tok := range tokens {
			checkPath(tok, false)
			checkPath(tok, true)
		}
		if len(tokens) > 0 {
			parseFlags(tokens[1:], "sv:R")
		}
		var stderr bytes.Buffer
		(&shell{errOut: &stderr}).parseACL(line)
	})
}
