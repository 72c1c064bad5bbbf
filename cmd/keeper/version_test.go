package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionCommands(t *testing.T) {
	tests := []struct {
		args []string
		want []string // lines the output must contain
	}{
		{[]string{"version"}, []string{"3.8.0-keeper", ", built on ", "\nzookeeper: 3.8.0\n", "\ngo:        go"}},
		{[]string{"--version"}, []string{"3.8.0-keeper", ", built on "}},
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
