package jaas

// tokenizer splits a JAAS file into tokens the way Java's reader does
// (java.io.StreamTokenizer as the JDK's ConfigFile sets it up; see the
// package comment).
type tokenizer struct {
	src  []rune
	pos  int
	line int
}

type tokKind uint8

const (
	tokEOF    tokKind = iota
	tokWord           // a word: its text
	tokQuoted         // a "double-quoted" string: its text, unescaped
	tokNumber         // starts with a digit, '.' or '-': never valid
	tokSingle         // a 'single-quoted' string: never valid
	tokPunct          // any other character: punct
)

type token struct {
	kind  tokKind
	text  string
	punct rune
	line  int
}

func isBlank(c rune) bool { return c >= 0 && c <= ' ' }

func isWordStart(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 160 ||
		c == '$' || c == '_' || c == '*'
}

func isNumeric(c rune) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' }

func (t *tokenizer) peek() (rune, bool) {
	if t.pos >= len(t.src) {
		return 0, false
	}
	return t.src[t.pos], true
}

// advance consumes one character, counting lines (\r\n is one line end).
func (t *tokenizer) advance() rune {
	c := t.src[t.pos]
	t.pos++
	switch c {
	case '\n':
		t.line++
	case '\r':
		if n, ok := t.peek(); !ok || n != '\n' {
			t.line++
		}
	}
	return c
}

// skipLine consumes up to (not including) the end of the line.
func (t *tokenizer) skipLine() {
	for c, ok := t.peek(); ok && c != '\n' && c != '\r'; c, ok = t.peek() {
		t.pos++
	}
}

func (t *tokenizer) next() token {
	for {
		c, ok := t.peek()
		if !ok {
			return token{kind: tokEOF, line: t.line}
		}
		line := t.line
		switch {
		case isBlank(c):
			t.advance()
		case isNumeric(c):
			for c, ok := t.peek(); ok && (isNumeric(c) || isWordStart(c)); c, ok = t.peek() {
				t.advance()
			}
			return token{kind: tokNumber, line: line}
		case isWordStart(c):
			start := t.pos
			for c, ok := t.peek(); ok && (isWordStart(c) || isNumeric(c)); c, ok = t.peek() {
				t.advance()
			}
			return token{kind: tokWord, text: string(t.src[start:t.pos]), line: line}
		case c == '"' || c == '\'':
			t.advance()
			s := t.quoted(c)
			if c == '\'' {
				return token{kind: tokSingle, line: line}
			}
			return token{kind: tokQuoted, text: s, line: line}
		case c == '/':
			t.advance()
			if n, ok := t.peek(); ok && n == '*' {
				t.advance()
				if !t.skipBlockComment() {
					return token{kind: tokEOF, line: t.line}
				}
				continue
			}
			// "//" and a lone '/' both comment out the rest of the line.
			t.skipLine()
		default:
			t.advance()
			return token{kind: tokPunct, punct: c, line: line}
		}
	}
}

// skipBlockComment consumes up to and including "*/"; false at the end of
// the file.
func (t *tokenizer) skipBlockComment() bool {
	prev := rune(0)
	for {
		c, ok := t.peek()
		if !ok {
			return false
		}
		t.advance()
		if prev == '*' && c == '/' {
			return true
		}
		prev = c
	}
}

// quoted reads a string after its opening quote q, up to the closing quote,
// the end of the line (left for the caller) or the end of the file.
// Escapes are decoded as StreamTokenizer decodes them.
func (t *tokenizer) quoted(q rune) string {
	var out []rune
	for {
		c, ok := t.peek()
		if !ok || c == '\n' || c == '\r' {
			return string(out)
		}
		t.advance()
		if c == q {
			return string(out)
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		e, ok := t.peek()
		if !ok {
			return string(out)
		}
		t.advance()
		if e >= '0' && e <= '7' {
			n, digits := e-'0', 1
			maxDigits := 2
			if e <= '3' {
				maxDigits = 3
			}
			for digits < maxDigits {
				d, ok := t.peek()
				if !ok || d < '0' || d > '7' {
					break
				}
				t.advance()
				n, digits = n*8+d-'0', digits+1
			}
			out = append(out, n)
			continue
		}
		switch e {
		case 'a':
			e = 7
		case 'b':
			e = '\b'
		case 'f':
			e = '\f'
		case 'n':
			e = '\n'
		case 'r':
			e = '\r'
		case 't':
			e = '\t'
		case 'v':
			e = '\v'
		}
		out = append(out, e)
	}
}
