package jaas

import (
	"maps"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary files to Parse. It must never panic, and what
// it accepts, written back out in a canonical form, must parse to the same
// sections, flags and options.
func FuzzParse(f *testing.F) {
	for _, s := range []string{kazooServer, "", "A { };", "A { m required k=\"\\1234\"; };", "/* x", "A { m required k=\"${a}${/}${\"; };", "'x' \"y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		cfg, err := Parse([]byte(file), func(string) (string, bool) { return "v", true })
		if err != nil {
			return
		}
		var b strings.Builder
		for name, mods := range cfg.sections {
			b.WriteString(quote(name) + " {\n")
			for _, m := range mods {
				b.WriteString(quote(m.Class) + " " + string(m.Flag))
				for k, v := range m.Options {
					b.WriteString(" " + quote(k) + "=" + quote(v))
				}
				b.WriteString(";\n")
			}
			b.WriteString("};\n")
		}
		again, err := Parse([]byte(b.String()), nil)
		if err != nil {
			t.Fatalf("canonical form does not parse: %v\n%s", err, b.String())
		}
		if len(again.sections) != len(cfg.sections) {
			t.Fatalf("canonical form has %d sections, want %d", len(again.sections), len(cfg.sections))
		}
		for name, mods := range cfg.sections {
			got := again.sections[name]
			if len(got) != len(mods) {
				t.Fatalf("section %q: %d modules, want %d", name, len(got), len(mods))
			}
			for i := range mods {
				if got[i].Class != mods[i].Class || got[i].Flag != mods[i].Flag || !maps.Equal(got[i].Options, mods[i].Options) {
					t.Fatalf("section %q module %d changed: %+v, want %+v", name, i, got[i], mods[i])
				}
			}
		}
	})
}

// quote writes s as a quoted string, escaping what the tokenizer would
// otherwise read differently.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteString(`\` + string(r))
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
