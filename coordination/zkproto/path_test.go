package zkproto

import (
	"errors"
	"testing"
)

// TestValidatePath covers each rule of docs/zookeeper-protocol.md §2.5 and its edges.
func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/a", true},
		{"/a/b/c", true},
		{"/zookeeper", true},
		{"/zookeeper/quota", true},
		{"/a/.b", true},
		{"/a/b.", true},
		{"/a/...", true},
		{"/a/..b", true},
		{"/a/q-0000000001", true},
		{"/with space", true},
		{"/\u00a0nbsp", true},    // just above the C1 range
		{"/\u007e", true},        // '~', just below DEL
		{"/\u00e9t\u00e9", true}, // é
		{"/\u4e2d\u6587", true},  // CJK
		{"/\uf900", true},        // just above the private-use range
		{"/\uffef", true},        // just below the specials
		{"/\ud7ff", true},        // just below the surrogates
		{"", false},
		{"a", false},
		{"a/b", false},
		{"/a/", false},
		{"//", false},
		{"//a", false},
		{"/a//b", false},
		{"/.", false},
		{"/..", false},
		{"/a/.", false},
		{"/a/..", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/a\x00b", false},
		{"/\x01", false},
		{"/\x1f", false},
		{"/a\tb", false},
		{"/a\nb", false},
		{"/\x7f", false},             // DEL
		{"/\u0080", false},           // C1 start
		{"/\u009f", false},           // C1 end
		{"/\ue000", false},           // private use
		{"/\uf8ff", false},           // private use end
		{"/\ufff0", false},           // specials start
		{"/\ufffd", false},           // replacement character
		{"/\uffff", false},           // noncharacter
		{"/\U0001F600", false},       // a surrogate pair in Java
		{"/\xff", false},             // invalid UTF-8 reads as U+FFFD
		{"/a\xc0\x80", false},        // overlong NUL
		{"/\xed\xa0\x80", false},     // CESU-8 surrogate
		{"/\xf0\x9f\x98\x80", false}, // the same emoji, as bytes
	}
	for _, tt := range tests {
		err := ValidatePath(tt.path)
		if (err == nil) != tt.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", tt.path, err, tt.ok)
			continue
		}
		if err == nil {
			continue
		}
		var zerr *Error
		if !errors.As(err, &zerr) || zerr.Code != CodeBadArguments || zerr.Path != tt.path {
			t.Errorf("ValidatePath(%q) = %#v, want BadArguments with the path", tt.path, err)
		}
		if !errors.Is(err, ErrBadArguments) {
			t.Errorf("ValidatePath(%q) does not match ErrBadArguments", tt.path)
		}
	}
}

// TestPathParts checks ParentPath, BaseName and ChildPath.
func TestPathParts(t *testing.T) {
	tests := []struct {
		path, parent, base string
	}{
		{"/", "", ""},
		{"/a", "/", "a"},
		{"/a/b", "/a", "b"},
		{"/a/b/c", "/a/b", "c"},
		{"/a/", "/a", ""}, // a sequential create's prefix (docs/zookeeper-protocol.md §2.4 step 9)
		{"a", "", "a"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := ParentPath(tt.path); got != tt.parent {
			t.Errorf("ParentPath(%q) = %q, want %q", tt.path, got, tt.parent)
		}
		if got := BaseName(tt.path); got != tt.base {
			t.Errorf("BaseName(%q) = %q, want %q", tt.path, got, tt.base)
		}
		if tt.parent != "" && tt.base != "" {
			if got := ChildPath(tt.parent, tt.base); got != tt.path {
				t.Errorf("ChildPath(%q, %q) = %q, want %q", tt.parent, tt.base, got, tt.path)
			}
		}
	}
}
