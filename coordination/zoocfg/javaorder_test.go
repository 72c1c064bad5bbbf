package zoocfg

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The expectations below were printed by Java 17 (java.util.Properties
// loaded from the same lines, then a HashMap<Long, ...> filled from its
// entry set, as QuorumMaj fills it) and by Apache ZooKeeper 3.8's
// /zookeeper/config.
func TestPropertiesOrder(t *testing.T) {
	big := strings.Fields("tickTime initLimit syncLimit dataDir clientPort admin.enableServer " +
		"4lw.commands.whitelist autopurge.snapRetainCount autopurge.purgeInterval maxClientCnxns dataLogDir standaloneEnabled")
	for _, id := range []int{5, 21, 37, 1, 2, 3, 4, 100, 17, 64, 48, 6, 7, 8, 9, 10} {
		big = append(big, "server."+strconv.Itoa(id))
	}
	tests := []struct {
		name string
		keys []string
		want string
	}{
		// 28 keys: the table grows twice, and bins split with lastRun.
		{"zoo.cfg with 16 servers", big, "dataDir 4lw.commands.whitelist syncLimit server.17 server.10 standaloneEnabled " +
			"server.37 admin.enableServer initLimit clientPort server.100 autopurge.purgeInterval dataLogDir server.21 server.64 " +
			"server.2 server.1 server.48 autopurge.snapRetainCount tickTime server.6 server.5 server.4 server.3 server.9 server.8 " +
			"maxClientCnxns server.7"},
		{"letters", strings.Fields("a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd"),
			"bb dd aa cc a b c d e f g h i j k l m n o p q r s t u v w x y z"},
		{"repeats keep their first place", []string{"b", "a", "b"}, "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(propertiesOrder(tt.keys), " "); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	t.Run("server order", func(t *testing.T) {
		want := []int64{64, 1, 2, 3, 100, 4, 37, 5, 6, 7, 8, 9, 10, 48, 17, 21}
		if got := serverOrder(big); !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

func TestHashMapOrder(t *testing.T) {
	tests := []struct {
		in, want []int64
	}{
		{[]int64{3, 1, 2}, []int64{1, 2, 3}},
		{[]int64{33, 17, 2, 100}, []int64{33, 17, 2, 100}},
		{[]int64{17, 33, 2, 100}, []int64{17, 33, 2, 100}},
		{[]int64{1 << 32, 1}, []int64{1 << 32, 1}}, // Long.hashCode folds the high word
		{[]int64{-1}, []int64{-1}},
	}
	for _, tt := range tests {
		if got := hashMapOrder(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("hashMapOrder(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestJavaHostString(t *testing.T) {
	for in, want := range map[string]string{
		"::1":              "0:0:0:0:0:0:0:1",
		"fe80::a:B%eth0":   "fe80:0:0:0:0:0:a:b%eth0",
		"::ffff:127.0.0.1": "127.0.0.1",
		"127.0.0.1":        "127.0.0.1",
		"localhost":        "localhost",
		"0.0.0.0":          "0.0.0.0",
	} {
		if got := javaHostString(in); got != want {
			t.Errorf("javaHostString(%q) = %q, want %q", in, got, want)
		}
	}
}
