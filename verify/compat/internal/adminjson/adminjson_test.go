package adminjson

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestShape checks the top-level fields in order, with their kinds.
func TestShape(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{`{}`, nil},
		{`{"b": 1, "a": "x", "n": null, "o": {"k": true}, "l": [], "t": false}`,
			[]string{"b:number", "a:string", "n:null", "o:object", "l:array", "t:boolean"}},
	}
	for _, tt := range tests {
		if got := Shape(t, tt.body); !slices.Equal(got, tt.want) {
			t.Errorf("Shape(%s) = %v, want %v", tt.body, got, tt.want)
		}
	}
}

// TestDeepShape checks nested paths, merged list elements and member ids
// folded into ID.
func TestDeepShape(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{`{}`, []string{}},
		{`{"a": {"b": 1, "c": [1, "x"]}}`,
			[]string{"a.b:number", "a.c:array", "a.c[]:number", "a.c[]:string", "a:object"}},
		{`{"current_config": {"1": {"learner_type": "participant"}, "12": {"learner_type": "participant"}}}`,
			[]string{"current_config.ID.learner_type:string", "current_config.ID:object", "current_config:object"}},
		{`{"observers": [{"sid": 4}, {"sid": 5, "x": null}], "empty": []}`,
			[]string{"empty:array", "observers:array", "observers[].sid:number", "observers[].x:null", "observers[]:object"}},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.body), &v); err != nil {
			t.Fatal(err)
		}
		if got := DeepShape(v); !slices.Equal(got, tt.want) {
			t.Errorf("DeepShape(%s) =\n%v, want\n%v", tt.body, got, tt.want)
		}
	}
}
