// Package bookiecrash kills a real `keeper bookie` process with SIGKILL at
// seeded random moments (a chaos build that loses the bytes it had not
// synced, as a power loss would: internal/vfs/lazyfs) while clients add entries to many ledgers, fence
// some and write explicit LACs, restarts it, and checks that every add the
// bookie acknowledged reads back with the right payload and digest, and
// that fences and explicit LACs survived. It is a test-only package: see
// crash_test.go.
package bookiecrash
