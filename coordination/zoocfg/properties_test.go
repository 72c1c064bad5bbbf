package zoocfg

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []property
	}{
		{"empty", "", nil},
		{"equals", "a=b", []property{{"a", "b", 1}}},
		{"colon", "a:b", []property{{"a", "b", 1}}},
		{"space", "a b", []property{{"a", "b", 1}}},
		{"tab and form feed", "a\t\fb", []property{{"a", "b", 1}}},
		{"space around equals", "  a  =  b  ", []property{{"a", "b", 1}}},
		{"blank then colon", "a :b", []property{{"a", "b", 1}}},
		{"only first separator counts", "a==b", []property{{"a", "=b", 1}}},
		{"space then two separators", "a = :b", []property{{"a", ":b", 1}}},
		{"key only", "a", []property{{"a", "", 1}}},
		{"empty key", "=b", []property{{"", "b", 1}}},
		{"colon in value", "server.1=h:2888:3888", []property{{"server.1", "h:2888:3888", 1}}},
		{"comments and blank lines", "# c\n! c\n\n   \n  # indented\na=b\n", []property{{"a", "b", 6}}},
		{"hash inside value", "a=b#c", []property{{"a", "b#c", 1}}},
		{"crlf and cr", "a=1\r\nb=2\rc=3", []property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=b\\\n   c\nd=e", []property{{"a", "bc", 1}, {"d", "e", 3}}},
		{"continuation in key", "ke\\\n  y=v", []property{{"key", "v", 1}}},
		{"continuation chain", "a=1\\\n2\\\n3", []property{{"a", "123", 1}}},
		{"continued line starting with hash", "a=1\\\n#2", []property{{"a", "1#2", 1}}},
		{"blank line ends continuation", "a=1\\\n\nb=2", []property{{"a", "1", 1}, {"b", "2", 3}}},
		{"even backslashes do not continue", "a=1\\\\\nb=2", []property{{"a", "1\\", 1}, {"b", "2", 2}}},
		{"comment never continues", "# c \\\na=b", []property{{"a", "b", 2}}},
		{"backslash at end of input", "a=b\\", []property{{"a", "b", 1}}},
		{"escaped separators in key", `a\=b\:c\ d=e`, []property{{"a=b:c d", "e", 1}}},
		{"escapes", `a=x\t\n\r\f\q\\`, []property{{"a", "x\t\n\r\f" + `q\`, 1}}},
		{"unicode escape", `a=\u0041\u00e9`, []property{{"a", "Aé", 1}}},
		{"surrogate pair", `a=\ud83d\ude00`, []property{{"a", "😀", 1}}},
		{"lone surrogate", `a=\ud83dx`, []property{{"a", "\uFFFDx", 1}}},
		{"escaped trailing tab is trimmed like java", `a=b\t`, []property{{"a", "b", 1}}},
		{"utf8 passes through", "dataDir=/tmp/zk-ä", []property{{"dataDir", "/tmp/zk-ä", 1}}},
		{"duplicate keys kept in order", "a=1\na=2", []property{{"a", "1", 1}, {"a", "2", 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProperties([]byte(tt.in))
			if err != nil {
				t.Fatalf("parseProperties(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseProperties(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedEscape(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\u12g4`, "x=1\n" + `a\uZZZZ=b`} {
		_, err := parseProperties([]byte(in))
		if err == nil || !strings.Contains(err.Error(), `malformed \uxxxx`) {
			t.Errorf("parseProperties(%q) = %v, want a malformed escape error", in, err)
		}
	}
}
