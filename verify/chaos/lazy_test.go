package chaos

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCountDrops(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"keeper-run01.log": `time=… level=INFO msg="lazyfs: un-synced bytes are lost on a kill" writeback=0.2
time=… level=WARN msg="truncated a torn record at the end of the log" file=/d/log.1 offset=99
`,
		"keeper-run02.log": `time=… level=WARN msg="lazyfs: rolled back syncs a kill interrupted" undone=2 torn=1 changes_kept=3 files="[/a /b]"
time=… level=WARN msg="cut torn tail off txn log" file=/d/log.1 offset=7 reason=x
`,
		"bookie-run01.log": `level=WARN msg="cutting torn tail off journal" file=/j offset=4
level=WARN msg="cutting torn tail of entry log" log=/l offset=4
`,
	}
	for name, text := range logs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := CountDrops(filepath.Join(dir, "keeper-run*.log"))
	if want := (DropFigures{Repaired: 2, Undone: 2, Torn: 1}); got != want {
		t.Errorf("servers: %+v, want %+v", got, want)
	}
	if got := CountDrops(filepath.Join(dir, "bookie-run*.log")); got.Repaired != 2 {
		t.Errorf("bookies: %+v", got)
	}
	if env := (Config{}).dropUnsyncedEnv(dir); env != nil {
		t.Errorf("env without DropUnsynced: %v", env)
	}
	env := (Config{DropUnsynced: true}).dropUnsyncedEnv(dir)
	if !slices.Contains(env, "KEEPER_DROP_UNSYNCED=1") || len(env) != 2 {
		t.Errorf("env: %v", env)
	}
}
