package observability

import (
	"slices"
	"testing"

	"keeper/verify/compat/internal/adminjson"
	"keeper/verify/compat/zkreal"
)

// commandsWithOwnKeys are the commands whose keys are facts of the
// machine, not fields: system_properties lists the JVM's properties on
// ZooKeeper and keeper's settings on keeper (docs/observability.md);
// environment lists Java's keys where keeper has Go's; monitor is
// compared key by key elsewhere (mntr).
var commandsWithOwnKeys = []string{"system_properties", "environment", "monitor"}

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

	zkNames, keeperNames := adminjson.CommandNames(t, zkAdmin), adminjson.CommandNames(t, keeperAdmin)
	if !slices.Equal(zkNames, keeperNames) {
		t.Errorf("/commands differ:\nZooKeeper: %v\nkeeper:    %v", zkNames, keeperNames)
	}
	t.Logf("/commands: ZooKeeper %d, keeper %d", len(zkNames), len(keeperNames))
	compared := 0
	for _, name := range zkNames {
		zkShape := adminjson.Shape(t, adminjson.Command(t, zkAdmin, name))
		keeperShape := adminjson.Shape(t, adminjson.Command(t, keeperAdmin, name))
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
