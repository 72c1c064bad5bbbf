package observability

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"keeper/verify/compat/zkreal"
)

// getBody fetches url.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commandNames returns the names an admin server's /commands lists.
func commandNames(t *testing.T, addr string) []string {
	t.Helper()
	link := regexp.MustCompile(`<a href="/commands/([a-z_]+)">`)
	var names []string
	for _, m := range link.FindAllStringSubmatch(getBody(t, "http://"+addr+"/commands"), -1) {
		names = append(names, m[1])
	}
	return names
}

// jsonKind names a JSON value's type; a null is "null".
func jsonKind(v any) string {
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

// shape lists a command answer's top-level keys with the kind of each
// value, in order: "key:kind".
func shape(t *testing.T, body string) []string {
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
		out = append(out, fmt.Sprintf("%s:%s", key, jsonKind(v)))
	}
	return out
}

// commandsWithOwnKeys are the commands whose keys are facts of the
// machine, not fields: system_properties lists the JVM's properties on
// ZooKeeper and keeper's settings on keeper (docs/observability.md);
// environment lists Java's keys where keeper has Go's; monitor and
// configuration are compared key by key elsewhere (mntr, conf).
var commandsWithOwnKeys = []string{"system_properties", "environment", "monitor", "configuration"}

// TestAdminCommandsMatchZooKeeper starts ZooKeeper 3.8 with its admin
// server and keeper, runs the same workload on both, and compares the
// command lists and, command by command, the top-level fields of the
// answers: their names, order and JSON types.
func TestAdminCommandsMatchZooKeeper(t *testing.T) {
	ref := zkreal.Start(t, zkreal.Options{AdminServer: true})
	k := startKeeper(t)
	workload(t, ref.Addr())
	workload(t, k.Addr().String())
	zkAdmin, keeperAdmin := ref.AdminAddr(), k.AdminAddr().String()

	zkNames, keeperNames := commandNames(t, zkAdmin), commandNames(t, keeperAdmin)
	if !slices.Equal(zkNames, keeperNames) {
		t.Errorf("/commands differ:\nZooKeeper: %v\nkeeper:    %v", zkNames, keeperNames)
	}
	t.Logf("/commands: ZooKeeper %d, keeper %d", len(zkNames), len(keeperNames))
	compared := 0
	for _, name := range zkNames {
		zkShape := shape(t, getBody(t, "http://"+zkAdmin+"/commands/"+name))
		keeperShape := shape(t, getBody(t, "http://"+keeperAdmin+"/commands/"+name))
		if slices.Contains(commandsWithOwnKeys, name) {
			// Still the same envelope: "command" then "error" at the end.
			zkShape, keeperShape = zkShape[len(zkShape)-2:], keeperShape[len(keeperShape)-2:]
		}
		if !slices.Equal(zkShape, keeperShape) {
			t.Errorf("%s: fields differ:\nZooKeeper: %v\nkeeper:    %v", name, zkShape, keeperShape)
			continue
		}
		compared++
	}
	t.Logf("compared the fields of %d commands with ZooKeeper's", compared)
}
