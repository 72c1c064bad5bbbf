// Package jaas reads a JAAS login configuration file, the file Apache
// ZooKeeper names with -Djava.security.auth.login.config, and gives the
// ZooKeeper server's view of it: the DIGEST-MD5 users of its Server
// section, or the keytab and principal of its Kerberos login
// (docs/sasl.md).
//
// The package is pure: Parse takes the file's bytes and a lookup for the
// ${property} references Java expands in option values.
//
// # Syntax
//
// The file is a list of sections, each a name and a list of login modules:
//
//	Server {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    user_super="adminsecret"
//	    user_bob="bobsecret";
//	};
//
// Parse tokenizes as Java's own reader does (a java.io.StreamTokenizer):
// blanks and control characters separate tokens; // and # are not alike
// (// and a lone / start a comment to the end of the line, /* */ a block
// comment, # is an ordinary character and so an error); a word starts with
// a letter, '$', '_', '*' or any character above U+009F and goes on with
// those, digits, '.' and '-'; anything starting with a digit, '.' or '-' is
// a number, which is never valid here; "double quotes" make a string with
// C-style escapes (\n, \t, \", octal \123) that also ends at the end of a
// line; 'single quotes' are an error. A section name, module class,
// control flag, option key or value is a word or a quoted string. The
// control flag is required, requisite, sufficient or optional, in any case.
// A section named twice is an error; an option key given twice in one
// module keeps its last value.
//
// Option values expand ${name} as Java does: ${/} is "/", any other name is
// looked up (Java's system properties: keeper passes the -D flags of the
// environment, see docs/sasl.md), and an unknown name is an error. A "${"
// without a closing brace is kept as it is.
//
// Errors name the line and never the value: option values hold passwords.
package jaas

import (
	"fmt"
	"strings"
)

// MaxFileBytes bounds the file Parse accepts. JAAS files are a few hundred
// bytes; the bound stops a misdirected path from being slurped.
const MaxFileBytes = 1 << 20

// Flag is a login module's control flag.
type Flag string

// The control flags, as Parse spells them whatever the file's case.
const (
	Required   Flag = "required"
	Requisite  Flag = "requisite"
	Sufficient Flag = "sufficient"
	Optional   Flag = "optional"
)

// Module is one login module line of a section.
type Module struct {
	Class   string            // the login module's Java class name
	Flag    Flag              // its control flag
	Options map[string]string // key=value options, ${...} expanded
	Line    int               // 1-based line of the class name
}

// Config is a parsed file: its sections by name. Names are case-sensitive.
type Config struct {
	sections map[string][]Module
}

// Section returns the modules of the section named name. It reports false
// when the file has no such section, or the section lists no modules: Java
// treats both alike (getAppConfigurationEntry returns null).
func (c *Config) Section(name string) ([]Module, bool) {
	if c == nil {
		return nil, false
	}
	m := c.sections[name]
	return m, len(m) > 0
}

// Error is a syntax error or an unexpandable value.
type Error struct {
	Line int    // 1-based line
	Msg  string // what is wrong; never holds an option value
}

// Error formats e as "line N: MSG".
func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Parse reads a JAAS login configuration. lookup resolves ${name} in option
// values; nil resolves nothing.
func Parse(data []byte, lookup func(name string) (string, bool)) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("jaas: larger than %d bytes", MaxFileBytes)
	}
	p := &parser{t: tokenizer{src: []rune(string(data)), line: 1}, lookup: lookup}
	cfg := &Config{sections: map[string][]Module{}}
	p.next()
	for p.tok.kind != tokEOF {
		name, mods, err := p.section()
		if err != nil {
			return nil, err
		}
		if _, dup := cfg.sections[name]; dup {
			return nil, &Error{Line: p.tok.line, Msg: fmt.Sprintf("section %q is given more than once", name)}
		}
		cfg.sections[name] = mods
	}
	return cfg, nil
}

type parser struct {
	t      tokenizer
	tok    token
	lookup func(string) (string, bool)
}

func (p *parser) next() { p.tok = p.t.next() }

// section parses NAME { MODULE* } ;
func (p *parser) section() (string, []Module, error) {
	name, err := p.text("section name")
	if err != nil {
		return "", nil, err
	}
	if err := p.punct('{'); err != nil {
		return "", nil, err
	}
	var mods []Module
	for !p.is('}') {
		m, err := p.module()
		if err != nil {
			return "", nil, err
		}
		mods = append(mods, m)
	}
	if err := p.punct('}'); err != nil {
		return "", nil, err
	}
	if err := p.punct(';'); err != nil {
		return "", nil, err
	}
	return name, mods, nil
}

// module parses CLASS FLAG (KEY = VALUE)* ;
func (p *parser) module() (Module, error) {
	m := Module{Line: p.tok.line, Options: map[string]string{}}
	var err error
	if m.Class, err = p.text("login module class"); err != nil {
		return m, err
	}
	line := p.tok.line
	flag, err := p.text("control flag")
	if err != nil {
		return m, err
	}
	switch f := Flag(strings.ToLower(flag)); f {
	case Required, Requisite, Sufficient, Optional:
		m.Flag = f
	default:
		return m, &Error{Line: line, Msg: fmt.Sprintf("invalid control flag %q", flag)}
	}
	for !p.is(';') {
		key, err := p.text("option key")
		if err != nil {
			return m, err
		}
		if err := p.punct('='); err != nil {
			return m, err
		}
		line := p.tok.line
		raw, err := p.text("option value")
		if err != nil {
			return m, err
		}
		v, err := expand(raw, p.lookup)
		if err != nil {
			return m, &Error{Line: line, Msg: fmt.Sprintf("option %s: %v", key, err)}
		}
		m.Options[key] = v
	}
	p.next() // the ';'
	return m, nil
}

// is reports whether the current token is the punctuation c. At the end of
// the file it reports false, so the caller's next step reports the error.
func (p *parser) is(c rune) bool { return p.tok.kind == tokPunct && p.tok.punct == c }

// punct consumes the punctuation c.
func (p *parser) punct(c rune) error {
	if !p.is(c) {
		return p.unexpected(fmt.Sprintf("%q", c))
	}
	p.next()
	return nil
}

// text consumes a word or a quoted string and returns its text.
func (p *parser) text(what string) (string, error) {
	if p.tok.kind != tokWord && p.tok.kind != tokQuoted {
		return "", p.unexpected(what)
	}
	s := p.tok.text
	p.next()
	return s, nil
}

func (p *parser) unexpected(want string) error {
	found := "end of file"
	switch p.tok.kind {
	case tokWord:
		found = fmt.Sprintf("word %q", p.tok.text)
	case tokQuoted:
		found = "a quoted string"
	case tokSingle:
		found = "a single-quoted string (use double quotes)"
	case tokNumber:
		found = "a number (quote values that start with a digit, '.' or '-')"
	case tokPunct:
		found = fmt.Sprintf("%q", p.tok.punct)
	}
	return &Error{Line: p.tok.line, Msg: fmt.Sprintf("expected %s, found %s", want, found)}
}

// expand replaces ${name} in v as Java's PropertyExpander does.
func expand(v string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(v, "${") {
		return v, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		if i < 0 {
			break
		}
		end := strings.IndexByte(v[i+2:], '}')
		if end < 0 {
			break // no closing brace: the rest stays as it is
		}
		name := v[i+2 : i+2+end]
		b.WriteString(v[:i])
		switch val, ok := lookupProp(name, lookup); {
		case ok:
			b.WriteString(val)
		default:
			return "", fmt.Errorf("unable to expand property %q", name)
		}
		v = v[i+2+end+1:]
	}
	b.WriteString(v)
	return b.String(), nil
}

func lookupProp(name string, lookup func(string) (string, bool)) (string, bool) {
	if name == "/" {
		return "/", true
	}
	if lookup == nil {
		return "", false
	}
	return lookup(name)
}
