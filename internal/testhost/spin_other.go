//go:build !linux

package testhost

// spinShare is measured on Linux only; elsewhere the load average alone
// (where /proc has one) sets the factor.
func spinShare() (float64, bool) { return 0, false }
