package bookie

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseProperties(t *testing.T) {
	text := "# comment\n" +
		"! also a comment\n" +
		"bookiePort=3182\n" +
		"  journalDirectories = /a, /b  \n" +
		"ledgerDirectories: /l1\n" +
		"zkServers zk1:2181,\\\n" +
		"    zk2:2181\n" +
		"key\\ with\\ spaces=v\\tx\\u0041\n" +
		"empty=\n" +
		"bookiePort=3183\r\n"
	got, err := ParseProperties([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"bookiePort":         "3183",
		"journalDirectories": "/a, /b  ",
		"ledgerDirectories":  "/l1",
		"zkServers":          "zk1:2181,zk2:2181",
		"key with spaces":    "v\txA",
		"empty":              "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if _, err := ParseProperties([]byte("a=\\u12\n")); err == nil {
		t.Fatal("a malformed \\u escape was accepted")
	}
}

func TestConfigFromProperties(t *testing.T) {
	props := map[string]string{
		"bookiePort":                      "3190",
		"journalDirectories":              "/j1,/j2",
		"ledgerDirectories":               "/l1, /l2",
		"metadataServiceUri":              "zk+hierarchical://zk1:2181;zk2:2181/pulsar/ledgers",
		"journalSyncData":                 "false",
		"journalMaxGroupWaitMSec":         "1",
		"journalBufferedWritesThreshold":  "1048576",
		"journalFlushWhenQueueEmpty":      "false",
		"journalAdaptiveGroupWrites":      "true",
		"journalBufferedEntriesThreshold": "100",
		"diskUsageThreshold":              "0.9",
		"diskUsageWarnThreshold":          "0.8",
		"gcWaitTime":                      "900000",
		"minorCompactionThreshold":        "0.1",
		"minorCompactionInterval":         "1800",
		"majorCompactionThreshold":        "0",
		"majorCompactionInterval":         "86400",
		"readOnlyModeEnabled":             "false",
		"prometheusStatsHttpPort":         "8000",
		"someJavaOnlyKey":                 "x",

		"maxPendingAddRequestsPerThread":      "500",
		"maxPendingReadRequestsPerThread":     "0", // BookKeeper's "no bound"
		"maxPendingRequestBytesPerConnection": "1048576",
		"maxUnsentResponseBytesPerConnection": "65536",
		"maxPendingConnectionBytes":           "67108864",
		"waitTimeoutOnResponseBackpressureMs": "5000",
	}
	c, ignored, err := ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		ListenAddr:                          ":3190",
		JournalDirs:                         []string{"/j1", "/j2"},
		LedgerDirs:                          []string{"/l1", "/l2"},
		MetadataServers:                     []string{"zk1:2181", "zk2:2181"},
		LedgersRoot:                         "/pulsar/ledgers",
		JournalSyncDisabled:                 true,
		JournalMaxGroupWait:                 time.Millisecond,
		JournalBufferedWritesThresholdBytes: 1 << 20,
		JournalWaitWhenQueueEmpty:           true,
		JournalBufferedEntriesThreshold:     100,
		DiskUsageThreshold:                  0.9,
		DiskUsageWarnThreshold:              0.8,
		GCWaitTime:                          900 * time.Second,
		MinorCompactionThreshold:            0.1,
		MinorCompactionInterval:             30 * time.Minute,
		MajorCompactionThreshold:            -1,
		MajorCompactionInterval:             24 * time.Hour,
		ReadOnlyModeDisabled:                true,
		MetricsAddr:                         ":8000",
		MaxPendingAddsPerConn:               500,
		MaxPendingReadsPerConn:              -1,
		MaxPendingRequestBytesPerConn:       1 << 20,
		MaxUnsentBytesPerConn:               64 << 10,
		MaxPendingBytes:                     64 << 20,
		StuckClientTimeout:                  5 * time.Second,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	if !reflect.DeepEqual(ignored, []string{"someJavaOnlyKey"}) {
		t.Fatalf("ignored %v", ignored)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Defaults: port 3181, ledgers root /ledgers, natural group commit.
	c, _, err = ConfigFromProperties(map[string]string{"zkServers": "zk:2181"})
	if err != nil || c.ListenAddr != ":3181" || c.withDefaults().LedgersRoot != "/ledgers" || c.JournalWaitWhenQueueEmpty {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	// journalFlushWhenQueueEmpty=true is keeper's default said aloud.
	c, _, err = ConfigFromProperties(map[string]string{"zkServers": "zk:2181", "journalFlushWhenQueueEmpty": "true"})
	if err != nil || c.JournalWaitWhenQueueEmpty {
		t.Fatalf("journalFlushWhenQueueEmpty=true: %+v %v", c, err)
	}
}

// TestInvalidValuesNameTheirKey: every invalid value stops the start with
// a message naming the key.
func TestInvalidValuesNameTheirKey(t *testing.T) {
	base := map[string]string{"journalDirectories": "/j", "ledgerDirectories": "/l"}
	tests := map[string]string{
		"bookiePort":                      "70000",
		"journalSyncData":                 "yes",
		"journalMaxGroupWaitMSec":         "-1",
		"journalBufferedWritesThreshold":  "0",
		"journalFlushWhenQueueEmpty":      "sometimes",
		"journalAdaptiveGroupWrites":      "1",
		"journalBufferedEntriesThreshold": "-1",
		"diskUsageThreshold":              "1.5",
		"diskUsageWarnThreshold":          "abc",
		"gcWaitTime":                      "0",
		"minorCompactionThreshold":        "2",
		"majorCompactionInterval":         "-5",
		"readOnlyModeEnabled":             "maybe",
		"metadataServiceUri":              "etcd://e:2379/ledgers",
		"journalFormatVersionToWrite":     "5",
		"indexDirectories":                "/i1,/i2",
		"ledgerDirectories":               " , ",

		"maxPendingAddRequestsPerThread":      "many",
		"maxPendingReadRequestsPerThread":     "1e9",
		"maxPendingRequestBytesPerConnection": "0",
		"maxUnsentResponseBytesPerConnection": "-1",
		"maxPendingConnectionBytes":           "1GB",
		"waitTimeoutOnResponseBackpressureMs": "-1", // BookKeeper's "wait forever"
	}
	for key, value := range tests {
		props := map[string]string{}
		for k, v := range base {
			props[k] = v
		}
		props[key] = value
		_, _, err := ConfigFromProperties(props)
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v", key, value, err)
		}
	}
	// Values valid alone but not together are caught by Validate, which
	// names the keys too.
	cross := []struct {
		props map[string]string
		key   string
	}{
		{map[string]string{"diskUsageThreshold": "0.8", "diskUsageWarnThreshold": "0.9"}, "diskUsageWarnThreshold"},
		{map[string]string{"minorCompactionThreshold": "0.9", "majorCompactionThreshold": "0.5"}, "minorCompactionThreshold"},
		{map[string]string{"minorCompactionInterval": "100000", "majorCompactionInterval": "3600"}, "minorCompactionInterval"},
		{map[string]string{"ledgerDirectories": "/l,/l"}, "ledgerDirectories"},
		{map[string]string{"zkLedgersRootPath": "ledgers"}, "zkLedgersRootPath"},
		{map[string]string{"journalAlignmentSize": "1000"}, "journalAlignmentSize"},
	}
	for _, tt := range cross {
		props := map[string]string{}
		for k, v := range base {
			props[k] = v
		}
		for k, v := range tt.props {
			props[k] = v
		}
		c, _, err := ConfigFromProperties(props)
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%v: %v", tt.props, err)
		}
	}
	if err := (Config{LedgerDirs: []string{"/l"}}).Validate(); err == nil || !strings.Contains(err.Error(), "journalDirectories") {
		t.Errorf("no journal directory: %v", err)
	}
}
