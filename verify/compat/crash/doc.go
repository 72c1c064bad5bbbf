// Package crash kills a real keeper server process with SIGKILL while many
// sessions write to it (a chaos build that loses the bytes it had not
// synced, as a power loss would: internal/vfs/lazyfs), restarts it, and checks that nothing the clients
// saw acknowledged was lost and that the recovered tree is consistent with
// its own digest. It is a test-only package: see crash_test.go.
package crash
