package main

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/coordination/admin"
	"keeper/coordination/server"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkcore"
	"keeper/internal/testhost"
)

func TestParseConnectString(t *testing.T) {
	tests := []struct {
		in      string
		hosts   []string
		chroot  string
		wantErr string
	}{
		{in: "127.0.0.1:2181", hosts: []string{"127.0.0.1:2181"}},
		{in: "a:1,b:2", hosts: []string{"a:1", "b:2"}},
		{in: "a, b:2 ,", hosts: []string{"a:2181", "b:2"}},
		{in: "a:1,b:2/app/x", hosts: []string{"a:1", "b:2"}, chroot: "/app/x"},
		{in: "a:1/", hosts: []string{"a:1"}},
		{in: "[::1]:2181,[::1]", hosts: []string{"[::1]:2181", "[::1]:2181"}},
		{in: "", wantErr: "names no server"},
		{in: "/app", wantErr: "names no server"},
		{in: "a:1/app/", wantErr: "Path must not end with / character"},
		{in: "a:1/app//x", wantErr: "empty node name"},
	}
	for _, tt := range tests {
		cs, err := parseConnectString(tt.in)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseConnectString(%q): err %v, want %q", tt.in, err, tt.wantErr)
			}
		case err != nil || !slices.Equal(cs.hosts, tt.hosts) || cs.chroot != tt.chroot:
			t.Errorf("parseConnectString(%q) = %q %q %v, want %q %q", tt.in, cs.hosts, cs.chroot, err, tt.hosts, tt.chroot)
		}
	}
}

// runShellArgs runs one command against the connect string server and
// returns stdout, stderr and the exit status.
func runShellArgs(t *testing.T, server string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runShell(context.Background(), shellOptions{server: server, timeout: 10 * time.Second},
		args, strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// TestShellChroot runs commands through a connect string with a chroot and
// a first host that refuses connections: the shell reaches the second
// host, and every path it shows is relative to the chroot.
func TestShellChroot(t *testing.T) {
	addr := startShellServer(t)
	if _, errOut, code := runShellArgs(t, addr, "create", "/app"); code != 0 {
		t.Fatalf("create /app: %s", errOut)
	}
	server := "127.0.0.1:1," + addr + "/app"
	tests := []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{args: []string{"create", "/a", "x"}, stderr: "Created /a\n"},
		{args: []string{"create", "-s", "/a/s-", ""}, stderr: "Created /a/s-0000000000\n"},
		{args: []string{"ls", "/"}, stdout: "[a]\n"},
		{args: []string{"ls", "-R", "/"}, stdout: "/\n/a\n/a/s-0000000000\n"},
		{args: []string{"get", "/a"}, stdout: "x\n"},
		{args: []string{"get", "/none"}, stderr: "Node does not exist: /none\n", code: 1},
		{args: []string{"delete", "/a"}, stderr: "Node not empty: /a\n", code: 1},
		{args: []string{"sync", "/a"}, stdout: "Sync is OK\n"},
		{args: []string{"getAllChildrenNumber", "/"}, stdout: "2\n"},
		{args: []string{"deleteall", "/a"}},
		{args: []string{"ls", "/"}, stdout: "[]\n"},
	}
	for _, tt := range tests {
		stdout, stderr, code := runShellArgs(t, server, tt.args...)
		if stdout != tt.stdout || stderr != tt.stderr || code != tt.code {
			t.Fatalf("%v: got stdout %q stderr %q exit %d\nwant stdout %q stderr %q exit %d",
				tt.args, stdout, stderr, code, tt.stdout, tt.stderr, tt.code)
		}
	}
	// Outside the chroot, the nodes were under /app.
	if stdout, _, _ := runShellArgs(t, addr, "ls", "/"); stdout != "[app, zookeeper]\n" {
		t.Fatalf("ls / without chroot: %q", stdout)
	}
}

// TestShellChrootWatch checks that notifications name paths inside the
// chroot.
func TestShellChrootWatch(t *testing.T) {
	addr := startShellServer(t)
	runShellArgs(t, addr, "create", "/app")
	var out bytes.Buffer
	code := runShell(context.Background(), shellOptions{server: addr + "/app", timeout: 10 * time.Second, readOnly: false},
		nil, strings.NewReader("create /w x\nget -w /w\nset /w y\n"), &out, &out)
	if code != 0 || !strings.Contains(out.String(), "type:NodeDataChanged path:/w\n") {
		t.Fatalf("exit %d, output:\n%s", code, out.String())
	}
}

// TestShellZkCliFlags runs the shell as zkCli is run: one-dash long flags,
// a timeout in milliseconds.
func TestShellZkCliFlags(t *testing.T) {
	addr := startShellServer(t)
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"shell", "-server", addr, "-timeout", "5000", "ls", "/"}, want: "[zookeeper]\n"},
		{args: []string{"shell", "-timeout=5000", "-server=" + addr, "-r", "ls", "/"}, want: "[zookeeper]\n"},
		{args: []string{"shell", "--server", addr, "--timeout", "5s", "-waitforconnection", "ls", "/"}, want: "[zookeeper]\n"},
		{args: []string{"shell", "-server", addr, "-timeout", "soon", "ls", "/"}, wantErr: "neither a duration"},
		{args: []string{"shell", "-server", addr, "-timeout", "0", "ls", "/"}, wantErr: "must be positive"},
		{args: []string{"shell", "-server", addr, "--frob", "ls", "/"}, wantErr: "unknown flag: --frob"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		root := newRootCmd()
		root.SetArgs(tt.args)
		root.SetOut(&out)
		root.SetErr(&out)
		err := root.Execute()
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err %v, want %q", tt.args, err, tt.wantErr)
			}
		case err != nil || out.String() != tt.want:
			t.Errorf("%v: output %q, err %v; want %q", tt.args, out.String(), err, tt.want)
		}
	}
}

// TestShellUnreachable checks what the shell does when no server answers:
// a command or -waitforconnection exits 1; an interactive shell starts
// unconnected, says so, and connect reaches a server.
func TestShellUnreachable(t *testing.T) {
	addr := startShellServer(t)
	var out, errOut bytes.Buffer
	o := shellOptions{server: "127.0.0.1:1", timeout: 5 * time.Second, waitForConnection: true}
	if code := runShell(context.Background(), o, nil, strings.NewReader("ls /\n"), &out, &errOut); code != 1 ||
		!strings.HasPrefix(errOut.String(), "Cannot connect to 127.0.0.1:1: ") {
		t.Fatalf("-waitforconnection: exit %d, stderr %q", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	o.waitForConnection = false
	script := "ls /\nconnect " + addr + "\nls /\n"
	code := runShell(context.Background(), o, nil, strings.NewReader(script), &out, &errOut)
	want := "Connecting to 127.0.0.1:1\nNot connected\n\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n[zookeeper]\n"
	if code != 0 || out.String() != want || !strings.HasPrefix(errOut.String(), "Cannot connect to 127.0.0.1:1: connection refused") {
		t.Fatalf("exit %d\nstdout %q\nwant   %q\nstderr %q", code, out.String(), want, errOut.String())
	}
}

func TestShellVersion(t *testing.T) {
	addr := startShellServer(t)
	stdout, stderr, code := runShellArgs(t, addr, "version")
	if want := "ZooKeeper CLI version: " + admin.ReadBuild().FullVersion() + "\n"; code != 0 || stderr != "" || stdout != want {
		t.Fatalf("version: stdout %q stderr %q exit %d", stdout, stderr, code)
	}
}

func TestClientConfig(t *testing.T) {
	tests := []struct{ config, want string }{
		{"", " "},
		{"server.2=b:2888:3888:participant;0.0.0.0:2182\nserver.1=a:2888:3888;2181\nversion=100000000\n",
			"100000000 a:2181,0.0.0.0:2182"},
		{"server.1=a:2888:3888\nversion=1", "1 "},
	}
	for _, tt := range tests {
		if got := clientConfig(tt.config); got != tt.want {
			t.Errorf("clientConfig(%q) = %q, want %q", tt.config, got, tt.want)
		}
	}
}

// TestShellFailover drives a shell whose server goes away and comes back
// on a connect string of two hosts: the shell reports the disconnection,
// reattaches to the same session (its ephemeral node is still there, and
// the watch it set is set again and fires) and runs the command; once the
// session is closed for good, it says Expired.
func TestShellFailover(t *testing.T) {
	dir := t.TempDir()
	port := testhost.Ports(t, 1)[0]
	addr := "127.0.0.1:" + strconv.Itoa(port)
	start := func() *server.Server {
		cfg := server.Config{ClientAddr: addr, Core: zkcore.DefaultConfig(), Storage: server.StorageConfig{DataDir: dir}}
		s, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	srv := start()
	in, feed := io.Pipe()
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		// The shortest timeout the server grants (2 ticks), so that the
		// second part's session expires soon.
		done <- runShell(context.Background(), shellOptions{server: "127.0.0.1:1," + addr, timeout: 4 * time.Second},
			nil, in, &out, &out)
	}()
	say := func(line string) {
		if _, err := io.WriteString(feed, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want string, n int) {
		t.Helper()
		deadline := time.Now().Add(testhost.Scale(30 * time.Second))
		for strings.Count(out.String(), want) < n {
			if time.Now().After(deadline) {
				t.Fatalf("waited for %d× %q; output:\n%s", n, want, out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	say("create -e /eph x")
	expect("Created /eph", 1)
	say("create /watched a")
	expect("Created /watched", 1)
	say("get -w /watched")
	expect("a\n", 1)
	srv.Close()
	expect("state:Disconnected type:None", 1)
	srv = start()
	defer func() { srv.Close() }()
	say("ls /")
	expect("state:SyncConnected type:None", 2)
	expect("[eph, watched, zookeeper]\n", 1)
	say("set /watched b")
	expect("type:NodeDataChanged path:/watched", 1)

	// A session the server expired while the shell was away: reattaching
	// fails.
	srv.Close()
	expect("state:Disconnected type:None", 2)
	srv = start()
	probe, err := zkclient.Dial(context.Background(), addr, zkclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	deadline := time.Now().Add(testhost.Scale(60 * time.Second))
	for { // the restarted server expires the session nobody reattached to
		_, ok, err := probe.Exists(context.Background(), "/eph", false)
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session's ephemeral node is still there (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	say("ls /")
	expect("state:Expired type:None", 1)
	expect("Not connected\n", 1)
	feed.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; output:\n%s", code, out.String())
	}
}
