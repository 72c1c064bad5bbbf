package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/coordination/zoocfg"
)

// TestReadZooFile checks how zoo.cfg problems are reported: in the file's
// own name with the line and key, a misspelt key refused with the key
// meant, other unknown keys a warning.
func TestReadZooFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text string
		wantErr    string // with FILE for the file's path; "" for none
		wantLog    string // a fragment of the warning logged
	}{
		{name: "typo", text: "dataDir=/d\ntickTIme=100\n", wantErr: "FILE:2: unknown key tickTIme; did you mean tickTime?"},
		{name: "two typos", text: "dataDir=/d\ninitlimit=5\n\nsynclimit=2\n",
			wantErr: "FILE:2: unknown key initlimit; did you mean initLimit?\nFILE:4: unknown key synclimit; did you mean syncLimit?"},
		{name: "bad value", text: "dataDir=/d\n\ntickTime=soon\n", wantErr: `FILE:3: tickTime: invalid value "soon": `},
		{name: "no dataDir", text: "tickTime=2000\n", wantErr: "FILE: dataDir is not set"},
		{name: "unknown", text: "dataDir=/d\nmy.own.property=1\n", wantLog: "key=my.own.property warning=\"unknown key; ignored\" line=2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".cfg")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			_, err := readZooFile(path, slog.New(slog.NewTextHandler(&logs, nil)))
			want := strings.ReplaceAll(tt.wantErr, "FILE", path)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
				t.Fatalf("err %v, want %q", err, want)
			case !strings.Contains(logs.String(), tt.wantLog):
				t.Fatalf("logs %q, want %q", logs.String(), tt.wantLog)
			}
		})
	}
}

func TestZooFileValidateError(t *testing.T) {
	zc := zoocfg.Default()
	zc.DataDir = "/d"
	zc.Servers = []zoocfg.Server{{ID: 1}, {ID: 2}, {ID: 3}}
	err := zc.Validate()
	if err == nil {
		t.Fatal("an ensemble without initLimit and syncLimit validated")
	}
	got := zooFileError("/etc/tick.cfg", err).Error()
	for _, l := range strings.Split(got, "\n") {
		if !strings.HasPrefix(l, "/etc/tick.cfg: ") || strings.Contains(l, "zoocfg") {
			t.Fatalf("line %q of %q", l, got)
		}
	}
}

// TestReadMyID: an ensemble member's id file, missing or malformed, is
// named with what it must hold.
func TestReadMyID(t *testing.T) {
	tests := []struct {
		name    string
		content *string // nil: no file
		want    int64
		wantErr string // with CFG and MYID for the paths
	}{
		{name: "missing", wantErr: "CFG: the server.N lines make this an ensemble member, but MYID file is missing (it holds this server's N)"},
		{name: "empty", content: new(""), wantErr: "MYID: empty; want this server's N from the server.N lines"},
		{name: "not a number", content: new("one\n"), wantErr: `MYID: "one" is not a number; want this server's N`},
		{name: "id", content: new("3\n"), want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, myid := filepath.Join(dir, "zoo.cfg"), filepath.Join(dir, "myid")
			if tt.content != nil {
				if err := os.WriteFile(myid, []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			id, err := readMyID(cfg, dir)
			want := strings.NewReplacer("CFG", cfg, "MYID", myid).Replace(tt.wantErr)
			switch {
			case tt.wantErr == "" && (err != nil || id != tt.want):
				t.Fatalf("id %d, err %v; want %d", id, err, tt.want)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
				t.Fatalf("err %v, want %q", err, want)
			}
		})
	}
}
