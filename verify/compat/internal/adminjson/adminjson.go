// Package adminjson reads the answers of an admin server, keeper's or
// Apache ZooKeeper's, and describes their shape, for the tests that hold
// keeper's admin commands to ZooKeeper's (verify/compat/observability for
// a standalone server, verify/compat/mixed for an ensemble's members;
// docs/observability.md, "AdminServer commands").
package adminjson

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// maxBody bounds an answer: the longest, a busy server's stat or
// system_properties, stays far below it.
const maxBody = 4 << 20

// client bounds each request, so that a server that stops answering
// fails the test instead of holding it.
var client = &http.Client{Timeout: 30 * time.Second}

// Get fetches url and returns the body of its answer.
func Get(t testing.TB, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Command fetches command name from the admin server at addr.
func Command(t testing.TB, addr, name string) string {
	t.Helper()
	return Get(t, "http://"+addr+"/commands/"+name)
}

// commandLink is a command's link on /commands.
var commandLink = regexp.MustCompile(`<a href="/commands/([a-z_]+)">`)

// CommandNames returns the names the admin server at addr lists on
// /commands, in its order.
func CommandNames(t testing.TB, addr string) []string {
	t.Helper()
	var names []string
	for _, m := range commandLink.FindAllStringSubmatch(Get(t, "http://"+addr+"/commands"), -1) {
		names = append(names, m[1])
	}
	return names
}

// Kind names a JSON value's type; a null is "null".
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// Shape lists a command answer's top-level keys with the kind of each
// value, in order: "key:kind".
func Shape(t testing.TB, body string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", body)
	}
	var out []string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%s", key, Kind(v)))
	}
	return out
}

// Object decodes a command answer, which must be a JSON object.
func Object(t testing.TB, body string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil || v == nil {
		t.Fatalf("not a JSON object (%v): %s", err, body)
	}
	return v
}

// numericKey is a key that is a number: a member id keying a map.
var numericKey = regexp.MustCompile(`^[0-9]+$`)

// DeepShape lists every path in v with the kind of its value, sorted and
// without repeats: "key:kind", "key.inner:kind", "list[]:kind" for a
// list's elements (all of them, merged), "map.ID:kind" for a key that is
// a number (a member id), so that two members' answers compare.
func DeepShape(v any) []string {
	set := map[string]bool{}
	deepShape(v, "", set)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func deepShape(v any, path string, set map[string]bool) {
	if path != "" {
		set[path+":"+Kind(v)] = true
	}
	switch v := v.(type) {
	case map[string]any:
		for k, inner := range v {
			if numericKey.MatchString(k) {
				k = "ID"
			}
			if path != "" {
				k = path + "." + k
			}
			deepShape(inner, k, set)
		}
	case []any:
		for _, inner := range v {
			deepShape(inner, path+"[]", set)
		}
	}
}
