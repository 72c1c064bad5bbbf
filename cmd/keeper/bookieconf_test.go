package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBookieConfTypos checks that a bookkeeper.conf key one edit away from
// one keeper uses is refused with the key meant and its line, that a value
// refused names its key's line (the last, for a key set twice), and that
// other unknown keys are a warning.
func TestBookieConfTypos(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text string
		wantErr    string // FILE for the path
		wantLog    string
	}{
		{name: "typo", text: "bookiePort=3199\n\n  journalDirectries=/j\n",
			wantErr: "FILE:3: unknown key journalDirectries; did you mean journalDirectories?"},
		{name: "case", text: "bookieport: 3199\n", wantErr: "FILE:1: unknown key bookieport; did you mean bookiePort?"},
		{name: "bad value", text: "bookiePort=3199\ngcWaitTime=soon\n", wantErr: `FILE:2: gcWaitTime: "soon" is not`},
		{name: "bad value set twice", text: "bookiePort=abc\ngcWaitTime=1000\nbookiePort = xyz\n",
			wantErr: `FILE:3: bookiePort: "xyz" is not an integer`},
		{name: "refused setting", text: "bookiePort=3199\nzkEnableSecurity=true\n",
			wantErr: "FILE:2: zkEnableSecurity: keeper does not support"},
		{name: "unknown", text: "journalDirectories=/j\nledgerDirectories=/l\nsomeBookKeeperKey=1\n",
			wantLog: `configuration keys keeper does not use; ignored" file=`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".conf")
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd, flags := bookieCommand()
			var logs bytes.Buffer
			_, err := loadBookieConfig(cmd, []string{path}, flags, slog.New(slog.NewTextHandler(&logs, nil)))
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
