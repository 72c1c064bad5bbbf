package typo

import "testing"

func TestOneEditApart(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"tickTIme", "tickTime", true},
		{"TICKTIME", "tickTime", true},
		{"tikTime", "tickTime", true},
		{"tickkTime", "tickTime", true},
		{"tcikTime", "tickTime", true},
		{"tickTimx", "tickTime", true},
		{"tickTime", "tickTime", false},
		{"tockTimx", "tickTime", false},
		{"tickTi", "tickTime", false},
		{"initLimit", "syncLimit", false},
		{"", "a", true},
		{"ab", "ba", true},
		{"abc", "cba", false},
	}
	for _, tt := range tests {
		if got := OneEditApart(tt.a, tt.b); got != tt.want {
			t.Errorf("OneEditApart(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := OneEditApart(tt.b, tt.a); got != tt.want {
			t.Errorf("OneEditApart(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}
