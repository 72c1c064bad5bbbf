package zoocfg

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// base is the smallest zoo.cfg Parse accepts.
const base = "dataDir=/var/lib/zk\n"

// parsedBase is what Parse makes of base.
func parsedBase() *Config {
	c := defaults()
	c.DataDir, c.DataLogDir = "/var/lib/zk", "/var/lib/zk"
	c.MinSessionTimeout, c.MaxSessionTimeout = 6*time.Second, 60*time.Second
	return c
}

func mustParse(t *testing.T, in string) (*Config, []Warning) {
	t.Helper()
	c, w, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse(%q): %v", in, err)
	}
	return c, w
}

func TestParseDefaults(t *testing.T) {
	c, w := mustParse(t, base)
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	want := &Config{
		TickTime:                 3000 * time.Millisecond,
		DataDir:                  "/var/lib/zk",
		DataLogDir:               "/var/lib/zk",
		MaxClientCnxns:           60,
		GlobalOutstandingLimit:   1000,
		RequestThrottleStallTime: 100 * time.Millisecond,
		RequestThrottleDropStale: true,
		MinSessionTimeout:        6000 * time.Millisecond,
		MaxSessionTimeout:        60000 * time.Millisecond,
		FourLetterWhitelist:      []string{"srvr"},
		AdminEnableServer:        true,
		AdminServerPort:          8080,
		AdminServerAddress:       "0.0.0.0",
		JuteMaxBufferBytes:       0xfffff,
		ContainerCheckInterval:   time.Minute,
		SnapCount:                100000,
		AutopurgeSnapRetainCount: 3,
		StandaloneEnabled:        true,
		PreAllocSizeKB:           65536,
		ForceSync:                true,
		TLS:                      ClientTLS{HostnameVerification: true},
		QuorumTLS:                QuorumTLS{HostnameVerification: true, ReverseDNSLookup: true, HandshakeDetectionTimeout: 5 * time.Second},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Parse(base)\n got %+v\nwant %+v", c, want)
	}
}

func TestParseKeys(t *testing.T) {
	tests := []struct {
		in   string
		want func(c *Config)
	}{
		{"tickTime=2000", func(c *Config) {
			c.TickTime, c.MinSessionTimeout, c.MaxSessionTimeout = 2*time.Second, 4*time.Second, 40*time.Second
		}},
		{"tickTime=+2000\nminSessionTimeout=-1", func(c *Config) {
			c.TickTime, c.MinSessionTimeout, c.MaxSessionTimeout = 2*time.Second, 4*time.Second, 40*time.Second
		}},
		{"initLimit=10\nsyncLimit=5", func(c *Config) { c.InitLimitTicks, c.SyncLimitTicks = 10, 5 }},
		{"dataLogDir=/logs", func(c *Config) { c.DataLogDir = "/logs" }},
		{"clientPort=2181\nclientPortAddress=127.0.0.1", func(c *Config) { c.ClientPort, c.ClientPortAddress = 2181, "127.0.0.1" }},
		{"maxClientCnxns=0", func(c *Config) { c.MaxClientCnxns = 0 }},
		{"maxCnxns=500", func(c *Config) { c.MaxCnxns = 500 }},
		{"globalOutstandingLimit=50", func(c *Config) { c.GlobalOutstandingLimit = 50 }},
		{"zookeeper.globalOutstandingLimit=70", func(c *Config) { c.GlobalOutstandingLimit = 70 }},
		{"request_throttle_max_requests=20", func(c *Config) { c.RequestThrottleMaxRequests = 20 }},
		{"zookeeper.request_throttle_stall_time=250", func(c *Config) { c.RequestThrottleStallTime = 250 * time.Millisecond }},
		{"minSessionTimeout=1000\nmaxSessionTimeout=5000", func(c *Config) {
			c.MinSessionTimeout, c.MaxSessionTimeout = time.Second, 5*time.Second
		}},
		{"4lw.commands.whitelist= stat , ruok,,stat ", func(c *Config) { c.FourLetterWhitelist = []string{"stat", "ruok"} }},
		{"zookeeper.4lw.commands.whitelist=*", func(c *Config) { c.FourLetterWhitelist = []string{"*"} }},
		{"4lw.commands.whitelist=", func(c *Config) { c.FourLetterWhitelist = nil }},
		{"admin.enableServer=FALSE\nadmin.serverPort=9090\nadmin.serverAddress=127.0.0.1", func(c *Config) {
			c.AdminEnableServer, c.AdminServerPort, c.AdminServerAddress = false, 9090, "127.0.0.1"
		}},
		{"zookeeper.admin.enableServer=false\nzookeeper.admin.serverPort=0\nzookeeper.admin.serverAddress=::1", func(c *Config) {
			c.AdminEnableServer, c.AdminServerPort, c.AdminServerAddress = false, 0, "::1"
		}},
		{"jute.maxbuffer=4194304", func(c *Config) { c.JuteMaxBufferBytes = 4 << 20 }},
		{"znode.container.checkIntervalMs=500", func(c *Config) { c.ContainerCheckInterval = 500 * time.Millisecond }},
		{"snapCount=1000", func(c *Config) { c.SnapCount = 1000 }},
		{"zookeeper.snapCount=7", func(c *Config) { c.SnapCount = 7 }},
		{"autopurge.snapRetainCount=5\nautopurge.purgeInterval=24", func(c *Config) {
			c.AutopurgeSnapRetainCount, c.AutopurgePurgeInterval = 5, 24*time.Hour
		}},
		{"extendedTypesEnabled=true", func(c *Config) { c.ExtendedTypesEnabled = true }},
		{"zookeeper.extendedTypesEnabled=True", func(c *Config) { c.ExtendedTypesEnabled = true }},
		{"enforceQuota=true", func(c *Config) { c.EnforceQuota = true }},
		{"zookeeper.enforceQuota=TRUE", func(c *Config) { c.EnforceQuota = true }},
		{"enforceQuota=false", func(c *Config) {}},
		{"snapshot.trust.empty=true", func(c *Config) { c.SnapshotTrustEmpty = true }},
		{"zookeeper.snapshot.trust.empty=True", func(c *Config) { c.SnapshotTrustEmpty = true }},
		{"snapshot.trust.empty=false", func(c *Config) {}},
		{"superDigest=super:abc=", func(c *Config) { c.SuperDigest = "super:abc=" }},
		{"DigestAuthenticationProvider.superDigest=super:abc=", func(c *Config) { c.SuperDigest = "super:abc=" }},
		{"zookeeper.DigestAuthenticationProvider.superDigest=super:abc=", func(c *Config) { c.SuperDigest = "super:abc=" }},
		{"reconfigEnabled=false\nstandaloneEnabled=false", func(c *Config) { c.StandaloneEnabled = false }},
		{"reconfigEnabled=true", func(c *Config) { c.ReconfigEnabled = true }},
		{"dynamicConfigFile=/etc/zk/zoo.cfg.dynamic.100000000", func(c *Config) { c.DynamicConfigFile = "/etc/zk/zoo.cfg.dynamic.100000000" }},
		{"version=1A", func(c *Config) { c.ConfigVersion = 0x1a }},
		{"readonlymode.enabled=true", func(c *Config) { c.ReadOnlyModeEnabled = true }},
		{"preAllocSize=1024", func(c *Config) { c.PreAllocSizeKB = 1024 }},
		{"zookeeper.preAllocSize=16", func(c *Config) { c.PreAllocSizeKB = 16 }},
		{"forceSync=no", func(c *Config) { c.ForceSync = false }},
		{"zookeeper.forceSync=yes", func(c *Config) { c.ForceSync = true }},
		{"electionAlg=3\npeerType=Observer", func(c *Config) {}},
		{"server.1=127.0.0.1:2888:3888", func(c *Config) {
			c.Servers = []Server{{ID: 1, Host: "127.0.0.1", QuorumPort: 2888, ElectionPort: 3888}}
			c.ServerOrder = []int64{1}
		}},
		{"server.3=c:2888:3888\nserver.1=a:2888:3888\nserver.2=b:2888:3888:observer", func(c *Config) {
			c.Servers = []Server{
				{ID: 1, Host: "a", QuorumPort: 2888, ElectionPort: 3888},
				{ID: 2, Host: "b", QuorumPort: 2888, ElectionPort: 3888, Role: Observer},
				{ID: 3, Host: "c", QuorumPort: 2888, ElectionPort: 3888},
			}
			c.ServerOrder = []int64{1, 2, 3}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, _ := mustParse(t, base+tt.in)
			want := parsedBase()
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"tickTime=abc", `zoo.cfg:2: tickTime: invalid value "abc": not an integer`},
		{"tickTime=2147483648", `tickTime: invalid value "2147483648": out of range`},
		{"tickTime=0x10", `tickTime: invalid value "0x10"`},
		{"initLimit=ten", `initLimit: invalid value "ten"`},
		{"syncLimit=1.5", `syncLimit: invalid value "1.5"`},
		{"dataDir=", `dataDir: invalid value "": empty`},
		{"dataLogDir=", `dataLogDir: invalid value ""`},
		{"clientPort=65536", `clientPort: invalid value "65536": port out of range`},
		{"clientPort=-1", `clientPort: invalid value "-1"`},
		{"clientPortAddress=", `clientPortAddress: invalid value ""`},
		{"maxClientCnxns=x", `maxClientCnxns: invalid value "x"`},
		{"minSessionTimeout=1s", `minSessionTimeout: invalid value "1s"`},
		{"maxSessionTimeout=", `maxSessionTimeout: invalid value ""`},
		{"admin.enableServer=yes", `admin.enableServer: invalid value "yes": want true or false`},
		{"admin.serverPort=http", `admin.serverPort: invalid value "http"`},
		{"admin.serverAddress=", `admin.serverAddress: invalid value ""`},
		{"jute.maxbuffer=1M", `jute.maxbuffer: invalid value "1M"`},
		{"znode.container.checkIntervalMs=1m", `znode.container.checkIntervalMs: invalid value "1m"`},
		{"snapCount=many", `snapCount: invalid value "many"`},
		{"autopurge.snapRetainCount=x", `autopurge.snapRetainCount: invalid value "x"`},
		{"autopurge.purgeInterval=1h", `autopurge.purgeInterval: invalid value "1h"`},
		{"extendedTypesEnabled=1", `extendedTypesEnabled: invalid value "1": want true or false`},
		{"standaloneEnabled=no", `standaloneEnabled: invalid value "no"`},
		{"reconfigEnabled=", `reconfigEnabled: invalid value ""`},
		{"readonlymode.enabled=on", `readonlymode.enabled: invalid value "on"`},
		{"preAllocSize=0", `preAllocSize: invalid value "0": want a positive size in KiB`},
		{"preAllocSize=64M", `preAllocSize: invalid value "64M"`},
		{"forceSync=false", `forceSync: invalid value "false": want yes or no`},
		{"superDigest=nodigest", `superDigest: invalid value "nodigest": want user:digest`},
		{"electionAlg=1", `electionAlg: invalid value "1": only 3 is supported`},
		{"peerType=leader", `peerType: invalid value "leader": unknown role`},
		{"reconfigEnabled=yes", `reconfigEnabled: invalid value "yes"`},
		{"dynamicConfigFile=", `dynamicConfigFile: invalid value "": empty`},
		{"dynamicConfigFile=/d/dyn\nserver.1=h:1:2", `server.1: invalid value "h:1:2": must be in the dynamic configuration file`},
		{"server.1=h:1:2\ndynamicConfigFile=/d/dyn", `server.1: invalid value "h:1:2": must be in the dynamic configuration file`},
		{"dynamicConfigFile=/d/dyn\ngroup.1=1:2", `group.1: invalid value "1:2": must be in the dynamic configuration file`},
		{"version=xyz", `version: invalid value "xyz": not a hexadecimal 64-bit integer`},
		{"version=10000000000000000", `version: invalid value "10000000000000000"`},
		{"group.1=1:2:3", `group.1: invalid value "1:2:3": hierarchical quorums are not supported`},
		{"weight.1=1", `weight.1: invalid value "1": hierarchical quorums`},
		{"server.x=h:1:2", `server.x: invalid value "h:1:2": server id is not an integer`},
		{"server.0=h:1:2", `server.0: invalid value "h:1:2": server id must be positive`},
		{"server.1=h:1", `server.1: invalid value "h:1": want host:quorumPort:electionPort`},
		{`a=\u00`, `zoo.cfg:2: malformed \uxxxx escape`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, w, err := Parse(strings.NewReader(base + tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want error containing %q", tt.in, err, tt.want)
			}
			if c != nil || w != nil {
				t.Errorf("Parse returned a config or warnings with its error")
			}
		})
	}
}

func TestParseErrorType(t *testing.T) {
	_, _, err := Parse(strings.NewReader("dataDir=/d\n\ntickTime = abc \n"))
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error %v is not a *Error", err)
	}
	if perr.Line != 3 || perr.Key != "tickTime" || perr.Value != "abc" || perr.Err == nil {
		t.Errorf("got %+v", perr)
	}
}

func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"no dataDir", "clientPort=2181", "zoo.cfg: dataDir is not set"},
		{"too large", base + strings.Repeat("#", MaxFileBytes), "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want error containing %q", err, tt.want)
			}
		})
	}
	_, _, err := Parse(iotest.ErrReader(errors.New("disk on fire")))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Parse(failing reader) = %v", err)
	}
}

func TestParseWarnings(t *testing.T) {
	tests := []struct {
		in   string
		want []Warning
	}{
		{"frobnicate=1", []Warning{{2, "frobnicate", "unknown key; ignored"}}},
		{"zookeeper.frobnicate=1", []Warning{{2, "zookeeper.frobnicate", "unknown key; ignored"}}},
		{"localSessionsEnabled=true\nserverCnxnFactory=x\nmetricsProvider.httpPort=7000", []Warning{
			{2, "localSessionsEnabled", "zookeeper setting not supported by keeper; ignored"},
			{3, "serverCnxnFactory", "zookeeper setting not supported by keeper; ignored"},
			{4, "metricsProvider.httpPort", "zookeeper setting not supported by keeper; ignored"},
		}},
		{"tickTime=1000\ntickTime=2000", []Warning{{2, "tickTime", "duplicate key; the value on line 3 wins"}}},
		{"dataLogDir=logs", []Warning{{2, "dataLogDir", "relative path; it is resolved against the working directory"}}},
		{"autopurge.snapRetainCount=1", []Warning{{0, "autopurge.snapRetainCount", "1 is below the minimum; using 3"}}},
		{"snapCount=1", []Warning{{0, "snapCount", "1 is below the minimum; using 2"}}},
		{"server.1=h:2888:3888", []Warning{{0, "server.N",
			"only one participant and standaloneEnabled; running standalone and ignoring the server list"}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, got := mustParse(t, base+tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("warnings\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseClamps(t *testing.T) {
	c, _ := mustParse(t, base+"autopurge.snapRetainCount=0\nsnapCount=-5")
	if c.AutopurgeSnapRetainCount != 3 || c.SnapCount != 2 {
		t.Errorf("snapRetainCount=%d snapCount=%d, want 3 and 2", c.AutopurgeSnapRetainCount, c.SnapCount)
	}
}

func TestWarningString(t *testing.T) {
	w := Warning{Line: 4, Key: "foo", Message: "unknown key; ignored"}
	if got, want := w.String(), "zoo.cfg:4: foo: unknown key; ignored"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestParseSampleConfig reads the zoo.cfg that ZooKeeper's distribution
// ships as an example.
func TestParseSampleConfig(t *testing.T) {
	const sample = `# The number of milliseconds of each tick
tickTime=2000
# The number of ticks that the initial
# synchronization phase can take
initLimit=10
# The number of ticks that can pass between
# sending a request and getting an acknowledgement
syncLimit=5
# the directory where the snapshot is stored.
# do not use /tmp for storage, /tmp here is just
# example sakes.
dataDir=/tmp/zookeeper
# the port at which the clients will connect
clientPort=2181
# the maximum number of client connections.
# increase this if you need to handle more clients
#maxClientCnxns=60
#
# Be sure to read the maintenance section of the
# administrator guide before turning on autopurge.
#
#autopurge.snapRetainCount=3
# Purge task interval in hours
# Set to "0" to disable auto purge feature
#autopurge.purgeInterval=1

## Metrics Providers
#metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider
#metricsProvider.httpPort=7000
#metricsProvider.exportJvmInfo=true
`
	c, w := mustParse(t, sample)
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if c.TickTime != 2*time.Second || c.InitLimitTicks != 10 || c.SyncLimitTicks != 5 ||
		c.DataDir != "/tmp/zookeeper" || c.ClientPort != 2181 {
		t.Errorf("got %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if got := c.ClientAddress(); got != "0.0.0.0:2181" {
		t.Errorf("ClientAddress() = %q", got)
	}
}
