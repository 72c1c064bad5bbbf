package server

import (
	"math/rand/v2"
	"testing"

	"keeper/coordination/zab"
	"keeper/coordination/zoocfg"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

const (
	cfgStatic = "/conf/zoo.cfg"
	three     = "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
		"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
		"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\nversion=100000000"
	five = "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
		"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
		"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\n" +
		"server.4=127.0.0.1:2004:3004:participant;127.0.0.1:4004\n" +
		"server.5=127.0.0.1:2005:3005:participant;127.0.0.1:4005\nversion=100000005"
)

func membership(version zxid.ID, text string) zab.Membership {
	return zab.Membership{Version: version, Text: []byte(text)}
}

// staticFS holds a zoo.cfg with the three servers' lines and a clientPort.
func staticFS(t *testing.T) *vfs.MemFS {
	t.Helper()
	m := vfs.NewMem()
	if err := m.MkdirAll("/conf", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create(cfgStatic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=/data\nclientPort=4001\n" +
		"server.1=127.0.0.1:2001:3001\nserver.2=127.0.0.1:2002:3002\nserver.3=127.0.0.1:2003:3003\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := m.SyncDir("/conf"); err != nil {
		t.Fatal(err)
	}
	return m
}

func load(t *testing.T, fsys vfs.FS) *zoocfg.Config {
	t.Helper()
	c, _, err := zoocfg.Load(cfgStatic, func(name string) ([]byte, error) { return vfs.ReadFile(fsys, name) })
	if err != nil {
		t.Fatalf("the files do not load: %v", err)
	}
	return c
}

// The files go through a configuration's life: stamped, a change
// proposed, the change active.
func TestConfigFiles(t *testing.T) {
	m := staticFS(t)
	cf := &ConfigFiles{FS: m, Static: cfgStatic, MyID: 1}
	orig, err := vfs.ReadFile(m, cfgStatic)
	if err != nil {
		t.Fatal(err)
	}
	if err := cf.Backup(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		cs      zab.ConfigState
		version int64
		servers int
		next    int64 // version of the next file, 0 for none
	}{
		{"stamped", zab.ConfigState{Active: membership(zxid.Make(1, 0), three)}, 0x100000000, 3, 0},
		{"proposed", zab.ConfigState{Active: membership(zxid.Make(1, 0), three), Next: &zab.Membership{Version: zxid.Make(1, 5), Text: []byte(five)}},
			0x100000000, 3, 0x100000005},
		{"active", zab.ConfigState{Active: membership(zxid.Make(1, 5), five)}, 0x100000005, 5, 0},
	}
	for _, st := range steps {
		if err := cf.SaveConfig(st.cs); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		c := load(t, m)
		if c.ConfigVersion != st.version || len(c.Servers) != st.servers {
			t.Fatalf("%s: loads version %x with %d servers", st.name, c.ConfigVersion, len(c.Servers))
		}
		switch {
		case st.next == 0 && c.NextEnsemble != nil:
			t.Fatalf("%s: a next file is left", st.name)
		case st.next != 0 && (c.NextEnsemble == nil || c.NextEnsemble.Version != st.next):
			t.Fatalf("%s: next %+v", st.name, c.NextEnsemble)
		}
		if c.DynamicConfigFile != zoocfg.DynamicFilename(cfgStatic, st.version) {
			t.Fatalf("%s: points at %s", st.name, c.DynamicConfigFile)
		}
	}
	if bak, err := vfs.ReadFile(m, cfgStatic+".bak"); err != nil || string(bak) != string(orig) {
		t.Fatalf("backup %q (%v), want the original", bak, err)
	}
	dyn, err := vfs.ReadFile(m, "/conf/zoo.cfg.dynamic.100000005")
	if err != nil {
		t.Fatal(err)
	}
	if want := "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
		"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
		"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\n" +
		"server.4=127.0.0.1:2004:3004:participant;127.0.0.1:4004\n" +
		"server.5=127.0.0.1:2005:3005:participant;127.0.0.1:4005"; string(dyn) != want {
		t.Fatalf("dynamic file:\n%s", dyn)
	}
}

// crashingFS takes a crash image of its MemFS after every change of a
// directory, for the test to load.
type crashingFS struct {
	*vfs.MemFS
	images []*vfs.MemFS
	rng    *rand.Rand
}

func (c *crashingFS) snap() {
	c.images = append(c.images, c.MemFS.CrashClone(nil), c.MemFS.CrashClone(c.rng))
}

func (c *crashingFS) Create(name string) (vfs.File, error) {
	f, err := c.MemFS.Create(name)
	c.snap()
	return f, err
}

func (c *crashingFS) Rename(o, n string) error { err := c.MemFS.Rename(o, n); c.snap(); return err }
func (c *crashingFS) Remove(name string) error { err := c.MemFS.Remove(name); c.snap(); return err }
func (c *crashingFS) SyncDir(d string) error   { err := c.MemFS.SyncDir(d); c.snap(); return err }

// Whenever a crash comes while the active configuration changes, what is
// on disk loads: the old configuration with the proposed one as next, or
// the new one (with a next file of the same version, if the crash came
// before it was removed).
func TestConfigFilesCrash(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		m := staticFS(t)
		cf := &ConfigFiles{FS: m, Static: cfgStatic, MyID: 1}
		if err := cf.SaveConfig(zab.ConfigState{Active: membership(zxid.Make(1, 0), three),
			Next: &zab.Membership{Version: zxid.Make(1, 5), Text: []byte(five)}}); err != nil {
			t.Fatal(err)
		}
		cfs := &crashingFS{MemFS: m, rng: rand.New(rand.NewPCG(seed, 3))}
		cf.FS = cfs
		if err := cf.SaveConfig(zab.ConfigState{Active: membership(zxid.Make(1, 5), five)}); err != nil {
			t.Fatal(err)
		}
		for i, img := range cfs.images {
			c := load(t, img)
			switch c.ConfigVersion {
			case 0x100000000:
				if c.NextEnsemble == nil || c.NextEnsemble.Version != 0x100000005 {
					t.Fatalf("seed %d image %d: the old configuration without the proposed one", seed, i)
				}
			case 0x100000005:
				if len(c.Servers) != 5 {
					t.Fatalf("seed %d image %d: %d servers", seed, i, len(c.Servers))
				}
			default:
				t.Fatalf("seed %d image %d: version %x", seed, i, c.ConfigVersion)
			}
		}
	}
}
