package server

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
	"keeper/internal/vfs"
)

func TestConfigFromZooEnforceQuota(t *testing.T) {
	for _, tt := range []struct {
		cfg  string
		want bool
	}{
		{"", false},
		{"enforceQuota=true\n", true},
		{"enforceQuota=false\n", false},
		{"zookeeper.enforceQuota=true\n", true},
	} {
		zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/zk\n" + tt.cfg))
		if err != nil {
			t.Fatal(err)
		}
		if got := ConfigFromZoo(zc, nil).Core.EnforceQuota; got != tt.want {
			t.Errorf("%q: EnforceQuota %v, want %v", tt.cfg, got, tt.want)
		}
	}
}

// TestQuotaAfterRestart fills a quota up to its hard limit while fuzzy
// snapshots are taken, restarts from the newest snapshot and the log, and
// from the log alone: the stats are what they were and the limit still
// holds, because loading a snapshot and replaying the log rebuild what the
// tree tracks of quotas.
func TestQuotaAfterRestart(t *testing.T) {
	const limit = 60
	mem := vfs.NewMem()
	mut := func(c *Config) {
		c.Core.EnforceQuota = true
		c.Storage.SnapCount = 20
		c.Storage.SnapshotStepNodes = 1
	}
	s := mustStartDurable(t, durableConfig(mem, mut))
	c := zkOpen(t, s)
	mustCreate(t, c, "/q", []byte("root"), 0, openACL)
	mustCreate(t, c, datatree.QuotaPath+"/q", nil, 0, openACL)
	var lim datatree.StatsTrack
	lim.Set(datatree.QuotaCountHardLimit, limit)
	mustCreate(t, c, datatree.QuotaLimitPath("/q"), []byte(lim.String()), 0, openACL)
	mustCreate(t, c, datatree.QuotaStatPath("/q"), []byte("count=0,bytes=0"), 0, openACL)
	for i := 1; i < limit; i++ {
		mustCreate(t, c, fmt.Sprintf("/q/n%d", i), []byte("abc"), 0, openACL)
	}
	if _, err := c.Create("/q/over", nil, 0, openACL); codeOf(t, err) != zkproto.CodeQuotaExceeded {
		t.Fatalf("create past the limit: %v", err)
	}
	waitSnapshotIdle(t, s)
	before := inspectImage(t, s)
	wantStats := fmt.Sprintf("count=%d,bytes=%d", limit, 4+3*(limit-1))
	if got := string(before.Nodes[datatree.QuotaStatPath("/q")].Data); got != wantStats {
		t.Fatalf("stats %q, want %q", got, wantStats)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(snapshots(t, mem)) < 2 {
		t.Fatalf("snapshots %v: the test needs some taken while the quota filled", snapshots(t, mem))
	}
	logOnly := mem.CrashClone(nil)
	for _, info := range snapshots(t, logOnly) {
		if err := logOnly.Remove(filepath.Join(durableSnapDir, info.Name)); err != nil {
			t.Fatal(err)
		}
	}

	for name, fs := range map[string]vfs.FS{"snapshot and log": mem, "log alone": logOnly} {
		t.Run(name, func(t *testing.T) {
			s := mustStartDurable(t, durableConfig(fs, mut))
			if d := diffImages(before, inspectImage(t, s)); d != "" {
				t.Fatalf("tree after restart differs:\n%s", d)
			}
			var quotas []string
			s.Inspect(func(core *zkcore.Server) { quotas = core.Tree().QuotaPaths() })
			if len(quotas) != 1 || quotas[0] != "/q" {
				t.Fatalf("quotas after restart %v", quotas)
			}
			c := zkOpen(t, s)
			if _, err := c.Create("/q/over", nil, 0, openACL); codeOf(t, err) != zkproto.CodeQuotaExceeded {
				t.Fatalf("create past the limit after restart: %v", err)
			}
			if err := c.Delete("/q/n1", -1); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Create("/q/again", []byte("zz"), 0, openACL); err != nil {
				t.Fatalf("create under the limit after restart: %v", err)
			}
			data, _, err := c.Get(datatree.QuotaStatPath("/q"))
			if want := fmt.Sprintf("count=%d,bytes=%d", limit, 4+3*(limit-2)+2); err != nil || string(data) != want {
				t.Fatalf("stats %q %v, want %q", data, err, want)
			}
		})
	}
}
