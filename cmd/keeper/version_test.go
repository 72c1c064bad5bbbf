package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"keeper/coordination/admin"
)

func TestVersionCommands(t *testing.T) {
	tests := []struct {
		args []string
		want []string // lines the output must contain
	}{
		{[]string{"version"}, []string{"3.8.0-keeper", ", built on ", "\nzookeeper: 3.8.0\n", "\ngo:        go"}},
		{[]string{"--version"}, []string{"3.8.0-keeper", ", built on "}},
		{[]string{"version", "--json"}, []string{`"full_version":"3.8.0-keeper`, `"zookeeper_version":"3.8.0"`, `"go_version":"go`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetArgs(tt.args)
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestVersionJSON: the record decodes and says what the text says.
func TestVersionJSON(t *testing.T) {
	b := admin.Build{ZooKeeperVersion: "3.8.0", Version: "v1.2.3", Revision: "0123456789abcdef", Modified: true,
		Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), GoVersion: "go1.26"}
	var out bytes.Buffer
	if err := printVersionJSON(&out, b); err != nil {
		t.Fatal(err)
	}
	var got versionRecord
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	want := versionRecord{FullVersion: b.FullVersion(), ZooKeeperVersion: "3.8.0", Version: "v1.2.3",
		Revision: "0123456789abcdef", Modified: true, Time: "2026-11-30T12:00:00Z", GoVersion: "go1.26"}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("not one line: %q", out.String())
	}
}
