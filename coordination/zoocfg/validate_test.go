package zoocfg

import (
	"strings"
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	c := Default()
	if got := c.ClientAddress(); got != "127.0.0.1:2181" {
		t.Errorf("ClientAddress() = %q, want 127.0.0.1:2181", got)
	}
	if c.Distributed() {
		t.Error("Default() is distributed")
	}
	if c.TickTime != DefaultTickTime || c.MinSessionTimeout != 6*time.Second || c.MaxSessionTimeout != time.Minute {
		t.Errorf("timeouts: tick %v min %v max %v", c.TickTime, c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "dataDir is not set") {
		t.Errorf("Validate() without DataDir = %v", err)
	}
	c.DataDir = "/var/lib/keeper"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate(): %v", err)
	}
	if got := c.TxnLogDir(); got != "/var/lib/keeper" {
		t.Errorf("TxnLogDir() = %q", got)
	}
	c.DataLogDir = "/logs"
	if got := c.TxnLogDir(); got != "/logs" {
		t.Errorf("TxnLogDir() = %q", got)
	}
}

// ensemble is a valid three-server configuration; this is server 2.
func ensemble() *Config {
	c := Default()
	c.DataDir = "/d"
	c.InitLimitTicks, c.SyncLimitTicks = 10, 5
	c.ClientPort, c.ClientPortAddress = 2181, ""
	c.Servers = []Server{
		{ID: 1, Host: "a", QuorumPort: 2888, ElectionPort: 3888},
		{ID: 2, Host: "b", QuorumPort: 2888, ElectionPort: 3888},
		{ID: 3, Host: "c", QuorumPort: 2888, ElectionPort: 3888},
	}
	c.MyID = 2
	return c
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   string // "" means valid
	}{
		{"valid ensemble", func(c *Config) {}, ""},
		{"tickTime zero", func(c *Config) { c.TickTime = 0 }, "tickTime must be positive"},
		{"no dataDir", func(c *Config) { c.DataDir = "" }, "dataDir is not set"},
		{"min session zero", func(c *Config) { c.MinSessionTimeout = 0 }, "minSessionTimeout must be positive"},
		{"min above max", func(c *Config) { c.MinSessionTimeout, c.MaxSessionTimeout = 5*time.Second, 4*time.Second },
			"minSessionTimeout (5s) must not be larger than maxSessionTimeout (4s)"},
		{"min equals max", func(c *Config) { c.MinSessionTimeout, c.MaxSessionTimeout = 5*time.Second, 5*time.Second }, ""},
		{"client port range", func(c *Config) { c.ClientPort = 70000 }, "clientPort 70000 out of range"},
		{"address without port", func(c *Config) { c.ClientPort, c.ClientPortAddress = 0, "127.0.0.1" },
			"clientPortAddress is set but clientPort is not set"},
		{"no client port", func(c *Config) { c.ClientPort = 0 }, "no client port"},
		{"client port from server line", func(c *Config) {
			c.ClientPort = 0
			c.Servers[1].ClientHost, c.Servers[1].ClientPort = "0.0.0.0", 2182
		}, ""},
		{"server line agrees with clientPort", func(c *Config) {
			c.Servers[1].ClientHost, c.Servers[1].ClientPort = "10.0.0.2", 2181
		}, ""},
		{"server line disagrees with clientPort", func(c *Config) {
			c.Servers[1].ClientHost, c.Servers[1].ClientPort = "0.0.0.0", 2182
		}, "differ from server.2's client address"},
		{"server line disagrees with clientPortAddress", func(c *Config) {
			c.ClientPortAddress = "10.0.0.9"
			c.Servers[1].ClientHost, c.Servers[1].ClientPort = "10.0.0.2", 2181
		}, "differ from server.2's client address"},
		{"admin port range", func(c *Config) { c.AdminServerPort = -1 }, "admin.serverPort -1 out of range"},
		{"maxClientCnxns negative", func(c *Config) { c.MaxClientCnxns = -1 }, "maxClientCnxns must not be negative"},
		{"jute.maxbuffer zero", func(c *Config) { c.JuteMaxBufferBytes = 0 }, "jute.maxbuffer must be positive"},
		{"container check interval zero", func(c *Config) { c.ContainerCheckInterval = 0 },
			"znode.container.checkIntervalMs must be positive"},
		{"snapCount", func(c *Config) { c.SnapCount = 1 }, "snapCount must be at least 2"},
		{"snapRetainCount", func(c *Config) { c.AutopurgeSnapRetainCount = 2 }, "autopurge.snapRetainCount must be at least 3"},
		{"purgeInterval", func(c *Config) { c.AutopurgePurgeInterval = -time.Hour }, "autopurge.purgeInterval must not be negative"},
		{"preAllocSize", func(c *Config) { c.PreAllocSizeKB = 0 }, "preAllocSize must be positive"},
		{"superDigest", func(c *Config) { c.SuperDigest = "super" }, "superDigest must be user:digest"},
		{"negative myid", func(c *Config) { c.MyID = -1 }, "myid must not be negative"},
		{"extended types and large myid", func(c *Config) {
			c.ExtendedTypesEnabled, c.MyID, c.Servers[1].ID = true, 255, 255
		}, "extendedTypesEnabled is true but myid 255 is larger than 254"},
		{"extended types and myid 254", func(c *Config) {
			c.ExtendedTypesEnabled, c.MyID, c.Servers[2].ID = true, 254, 254
		}, ""},
		{"duplicate server id", func(c *Config) { c.Servers[2].ID = 1 }, "server id 1 is listed more than once"},
		{"bad server id", func(c *Config) { c.Servers[0].ID = 0 }, "server.0: id 0 must be positive"},
		{"server without host", func(c *Config) { c.Servers[0].Host = "" }, "server.1: no host"},
		{"server port range", func(c *Config) { c.Servers[0].QuorumPort = 0 }, "server.1: ports 0:3888 out of range"},
		{"server same ports", func(c *Config) { c.Servers[0].ElectionPort = 2888 }, "server.1: quorum and election ports must differ"},
		{"server role", func(c *Config) { c.Servers[0].Role = 7 }, "server.1: unknown role Role(7)"},
		{"server client port", func(c *Config) { c.Servers[0].ClientPort = 65536 }, "server.1: client port 65536 out of range"},
		{"no initLimit", func(c *Config) { c.InitLimitTicks = 0 }, "initLimit is not set"},
		{"no syncLimit", func(c *Config) { c.SyncLimitTicks = 0 }, "syncLimit is not set"},
		{"no myid", func(c *Config) { c.MyID = 0 }, "myid is not set"},
		{"myid not listed", func(c *Config) { c.MyID = 9 }, "myid 9 is not among the server.N entries"},
		{"myid removed by a reconfiguration", func(c *Config) { c.MyID = 9; c.DynamicConfigFile = "/d/zoo.cfg.dynamic.100000004" },
			"myid 9 is not among the server.N entries of /d/zoo.cfg.dynamic.100000004: a reconfiguration removed this server"},
		{"observers without participants", func(c *Config) {
			for i := range c.Servers {
				c.Servers[i].Role = Observer
			}
		}, "observers without participants"},
		{"observers with one participant", func(c *Config) { c.Servers[1].Role, c.Servers[2].Role = Observer, Observer },
			"observers without a quorum"},
		{"one participant, standalone disabled", func(c *Config) {
			c.Servers, c.StandaloneEnabled = c.Servers[1:2], false
		}, ""},
		{"standalone disabled without servers", func(c *Config) { c.Servers, c.StandaloneEnabled = nil, false },
			"standaloneEnabled=false needs at least one participant"},
		{"single server runs standalone without limits", func(c *Config) {
			c.Servers, c.InitLimitTicks, c.SyncLimitTicks, c.MyID = c.Servers[:1], 0, 0, 0
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ensemble()
			tt.modify(c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := &Config{}
	err := c.Validate()
	if err == nil {
		t.Fatal("zero Config is valid")
	}
	for _, want := range []string{"tickTime", "dataDir", "snapCount", "jute.maxbuffer", "no client port"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() on a zero Config does not mention %s: %v", want, err)
		}
	}
}

func TestEnsembleFromFile(t *testing.T) {
	c, w := mustParse(t, `tickTime=2000
dataDir=/var/lib/zookeeper
initLimit=5
syncLimit=2
server.1=127.0.0.1:2888:3888
server.2=h:2888:3888:observer;2181
server.3=h:2889:3889;127.0.0.1:2181
server.4=127.0.0.4:2888:3888
`)
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	c.MyID = 3
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !c.Distributed() {
		t.Error("not distributed")
	}
	if got := len(c.Participants()); got != 3 {
		t.Errorf("%d participants, want 3", got)
	}
	if obs := c.Observers(); len(obs) != 1 || obs[0].ID != 2 {
		t.Errorf("observers = %+v", obs)
	}
	if got := c.ClientAddress(); got != "127.0.0.1:2181" {
		t.Errorf("ClientAddress() = %q", got)
	}
	if self, ok := c.Self(); !ok || self.Host != "h" || self.QuorumPort != 2889 {
		t.Errorf("Self() = %+v, %v", self, ok)
	}
	c.MyID = 1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "no client port") {
		t.Errorf("server 1 has no client port, Validate() = %v", err)
	}
}

func TestFourLetterAllowed(t *testing.T) {
	tests := []struct {
		list     []string
		readOnly bool
		cmd      string
		want     bool
	}{
		{nil, false, "srvr", true},
		{nil, false, "ruok", false},
		{[]string{"srvr"}, false, "stat", false},
		{[]string{"stat", "ruok"}, false, "ruok", true},
		{[]string{"*"}, false, "mntr", true},
		{nil, false, "isro", false},
		{nil, true, "isro", true},
	}
	for _, tt := range tests {
		c := &Config{FourLetterWhitelist: tt.list, ReadOnlyModeEnabled: tt.readOnly}
		if got := c.FourLetterAllowed(tt.cmd); got != tt.want {
			t.Errorf("whitelist %v readonly %v: FourLetterAllowed(%q) = %v, want %v", tt.list, tt.readOnly, tt.cmd, got, tt.want)
		}
	}
}

func TestClientAddress(t *testing.T) {
	tests := []struct {
		host string
		port int
		want string
	}{
		{"", 2181, "0.0.0.0:2181"},
		{"127.0.0.1", 2181, "127.0.0.1:2181"},
		{"::1", 2181, "[::1]:2181"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		c := &Config{ClientPortAddress: tt.host, ClientPort: tt.port}
		if got := c.ClientAddress(); got != tt.want {
			t.Errorf("ClientAddress(%q, %d) = %q, want %q", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestParseMyID(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"1", 1, ""},
		{"1\n", 1, ""},
		{" 42 \r\nignored", 42, ""},
		{"255", 255, ""},
		{"9223372036854775807", 9223372036854775807, ""},
		{"", 0, "myid: empty"},
		{"\n1", 0, "myid: empty"},
		{"0", 0, "myid: 0 is not positive"},
		{"-3", 0, "myid: -3 is not positive"},
		{"one", 0, `myid: "one" is not a number`},
		{"1 2", 0, "is not a number"},
		{"9223372036854775808", 0, "is not a number"},
	}
	for _, tt := range tests {
		got, err := ParseMyID([]byte(tt.in))
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseMyID(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseMyID(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.err)
		}
	}
}
