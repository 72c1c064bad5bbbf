package sasl

import "testing"

// TestKazooAuthRace: only a run whose one failure is test_invalid_sasl_auth
// timing out is run again, with or without pytest's short summary.
func TestKazooAuthRace(t *testing.T) {
	const header = "=================================== FAILURES ===================================\n"
	const raced = "______ TestLegacySASLDigestAuthentication.test_invalid_sasl_auth ______\n\n" +
		"    def test_invalid_sasl_auth(self):\n" +
		"E   kazoo.handlers.threading.KazooTimeoutError: Connection time-out\n" +
		"------------------------------ Captured log call -------------------------------\n" +
		"WARNING  kazoo.client:client.py:1 AUTH_FAILED closing\n"
	const other = "______ TestSASLDigestAuthentication.test_connect_sasl_auth ______\n\n" +
		"E   kazoo.exceptions.NoAuthError\n"
	const short = "=========================== short test summary info ============================\n" +
		"FAILED kazoo/tests/test_sasl.py::TestLegacySASLDigestAuthentication::test_invalid_sasl_auth - kazoo.handlers.threading.KazooTimeoutError: Connection time-out\n"
	for _, c := range []struct {
		name, summary, output string
		want                  bool
	}{
		{"no short summary", "1 failed, 3 passed, 2 skipped in 9.1s", ".F..ss\n" + header + raced, true},
		{"short summary", "1 failed, 3 passed, 2 skipped in 9.1s", ".F..ss\n" + header + raced + short, true},
		{"a plain function", "1 failed, 3 passed", header +
			"_________ test_invalid_sasl_auth _________\nE   KazooTimeoutError: Connection time-out\n", true},
		{"passed", "4 passed, 2 skipped in 3.0s", "....ss\n", false},
		{"another test failed", "1 failed, 3 passed, 2 skipped", header +
			"______ TestSASLDigestAuthentication.test_connect_sasl_auth ______\n" +
			"E   KazooTimeoutError: Connection time-out\n", false},
		{"two failures", "2 failed, 2 passed, 2 skipped", header + raced + other, false},
		{"one failure, two headers", "1 failed, 3 passed", header + raced + other, false},
		{"failed otherwise", "1 failed, 3 passed", header +
			"______ TestLegacySASLDigestAuthentication.test_invalid_sasl_auth ______\nE   AssertionError\n", false},
		{"a similar name", "1 failed, 3 passed", header +
			"______ TestX.test_invalid_sasl_auth_twice ______\nE   KazooTimeoutError: Connection time-out\n", false},
	} {
		if got := kazooAuthRace(c.summary, c.output); got != c.want {
			t.Errorf("%s: kazooAuthRace = %v, want %v", c.name, got, c.want)
		}
	}
}
