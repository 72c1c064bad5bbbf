// Package mitkdc runs an MIT KDC (Debian's krb5-kdc) on loopback for
// the compatibility tests, with its own database and configuration files
// in a temp dir: the realm, principals with random keys, keytabs exported
// from it, and credential caches that kinit fills. A test on a machine
// without the MIT tools is skipped, or failed when zkreal.RequireEnv
// (KEEPER_REQUIRE_ZK) is set.
package mitkdc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

// Realm is the test KDC's realm, also krb5.conf's default_realm.
const Realm = "EXAMPLE.COM"

// KDC is a running krb5kdc.
type KDC struct {
	Dir      string
	Krb5Conf string   // the krb5.conf clients use (-Djava.security.krb5.conf)
	Env      []string // KRB5_CONFIG and KRB5_KDC_PROFILE for the MIT tools
}

// Start creates the realm, starts krb5kdc and stops it at the end of the
// test. It skips (or fails, with KEEPER_REQUIRE_ZK) without the MIT
// binaries.
func Start(t testing.TB) *KDC {
	t.Helper()
	var missing []string
	for _, bin := range []string{"krb5kdc", "kdb5_util", "kadmin.local"} {
		if _, err := LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		require(t, "an MIT KDC (Debian's krb5-kdc and krb5-admin-server)", fmt.Errorf("%s not found", strings.Join(missing, ", ")))
	}
	dir := t.TempDir()
	port := testhost.Port(t)
	k := &KDC{Dir: dir, Krb5Conf: filepath.Join(dir, "krb5.conf")}
	krb5 := fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	rdns = false
	udp_preference_limit = 1
	default_ccache_name = FILE:%[2]s/ccache
[realms]
	%[1]s = {
		kdc = 127.0.0.1:%[3]d
	}
[domain_realm]
	localhost = %[1]s
`, Realm, dir, port)
	kdcConf := fmt.Sprintf(`[realms]
	%[1]s = {
		database_name = %[2]s/principal
		key_stash_file = %[2]s/stash
		acl_file = %[2]s/kadm5.acl
		kdc_listen = 127.0.0.1:%[3]d
		kdc_tcp_listen = 127.0.0.1:%[3]d
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
		max_life = 1h
	}
[logging]
	kdc = FILE:%[2]s/kdc.log
`, Realm, dir, port)
	for name, body := range map[string]string{"krb5.conf": krb5, "kdc.conf": kdcConf, "kadm5.acl": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k.Env = []string{"KRB5_CONFIG=" + k.Krb5Conf, "KRB5_KDC_PROFILE=" + filepath.Join(dir, "kdc.conf")}
	k.Run(t, "kdb5_util", "create", "-s", "-r", Realm, "-P", "master-secret")
	cmd := exec.Command(MustLook(t, "krb5kdc"), "-n", "-r", Realm)
	cmd.Env = append(os.Environ(), k.Env...)
	out, err := os.Create(filepath.Join(dir, "krb5kdc.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		out.Close()
	})
	deadline := time.Now().Add(testhost.Scale(30 * time.Second))
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "kdc.log"))
			t.Fatalf("krb5kdc does not listen on %d: %v\n%s", port, err, log)
		}
		time.Sleep(50 * time.Millisecond) // polling for the listener, bounded by deadline
	}
	return k
}

// Run runs an MIT tool with the KDC's configuration.
func (k *KDC) Run(t testing.TB, tool string, args ...string) string {
	t.Helper()
	cmd := exec.Command(MustLook(t, tool), args...)
	cmd.Env = append(os.Environ(), k.Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// AddPrincipal creates principal with a random key.
func (k *KDC) AddPrincipal(t testing.TB, principal string) {
	t.Helper()
	k.Run(t, "kadmin.local", "-r", Realm, "-q", "addprinc -randkey "+principal)
}

// Keytab exports principal's keys into a new keytab file and returns its
// path. Exporting gives the principal new keys, so a keytab exported
// earlier is stale from then on.
func (k *KDC) Keytab(t testing.TB, principal, name string) string {
	t.Helper()
	p := filepath.Join(k.Dir, name)
	k.Run(t, "kadmin.local", "-r", Realm, "-q", "ktadd -k "+p+" "+principal)
	return p
}

// Kinit fills a new credential cache with principal's ticket from keytab
// and returns its name (FILE:path), for KRB5CCNAME. Without kinit
// (Debian's krb5-user) it skips the test, or fails it as Start does.
func (k *KDC) Kinit(t testing.TB, principal, keytab string) string {
	t.Helper()
	kinit, err := LookPath("kinit")
	if err != nil {
		require(t, "kinit (Debian's krb5-user)", err)
	}
	ccache := "FILE:" + filepath.Join(t.TempDir(), "ccache")
	cmd := exec.Command(kinit, "-k", "-t", keytab, principal)
	cmd.Env = append(append(os.Environ(), k.Env...), "KRB5CCNAME="+ccache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kinit %s: %v\n%s", principal, err, out)
	}
	return ccache
}

// LookPath finds an MIT tool, which Debian puts in /usr/sbin, off the PATH
// of most users.
func LookPath(bin string) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", bin)
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// MustLook is LookPath, failing the test when the tool is missing.
func MustLook(t testing.TB, bin string) string {
	t.Helper()
	p, err := LookPath(bin)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// require skips t for want of what, or fails it when zkreal.RequireEnv is
// set.
func require(t testing.TB, what string, err error) {
	t.Helper()
	if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
		t.Fatalf("%s is required (%s=%s): %v", what, zkreal.RequireEnv, v, err)
	}
	t.Skipf("%s not available: %v", what, err)
}
