// Package lazyfs wraps a vfs.FS so that a SIGKILL of the process loses
// what a power loss would: the bytes written to files but not yet synced.
// It is the idea of Jepsen's lazyfs, inside the process: a killed
// process's page cache survives in the kernel, so without lazyfs a test
// that kills keeper with SIGKILL never sees a torn, un-synced tail.
//
// # The model
//
// A file's writes (Write, WriteAt) and truncates (Truncate) are kept in
// the process's memory, as a list of pending changes, oldest first, until
// the file is synced (Sync or SyncData, on any handle of the file): then
// they are written to the wrapped FS, in order, and the wrapped file is
// synced. A SIGKILL therefore drops exactly the changes made since each
// open file's last sync. Every read through the wrapper — ReadAt, Read,
// Seek, File.Stat's and FS.Stat's size — sees the pending changes, from
// any handle of the same file, as the kernel's page cache would show them.
//
// Closing the last writable handle of a file writes its pending changes
// to the wrapped FS without syncing them: a graceful close behaves as
// keeper behaves without lazyfs (the kernel keeps closed files' dirty
// pages across a kill), and closed files cost no memory. Only files open
// for writing at the moment of the kill lose data. This also means that
// lazyfs cannot catch a missing fsync before a close (vfs.MemFS's
// CrashClone, in process, can).
//
// Directory operations (Create's creation and O_TRUNC, Rename, Remove,
// MkdirAll) go to the wrapped FS at once and survive a kill, as they do
// in the kernel; SyncDir passes through. A rename of a file with pending
// changes moves them with it (they belong to the file, not the name).
//
// # Writeback and torn tails
//
// A disk whose power fails has often written part of its cache already.
// With Options.Writeback set, after each write the wrapper writes, with
// that chance, a random prefix of the file's pending changes to the
// wrapped FS (not synced), the last one of it possibly cut at a random
// byte, as vfs.MemFS's CrashClone does with a rand: the changes reach the
// disk in order but only part way. A kill then leaves a torn tail that
// recovery must cut off. Options.MaxPendingBytes bounds the memory a file
// holds: past it every pending change is written back (not synced), as the
// kernel writes dirty pages back under memory pressure.
//
// # Identity
//
// Files are known by their cleaned path: handles opened on the same path
// share one pending state. Rename and Remove keep that map true; renaming
// a directory that holds open files does not (their handles still work,
// but a new Open of the new path does not see their pending changes).
//
// FS.Crash simulates the kill in a test: it drops every pending change
// and closes every wrapped handle, after which the test reopens the files
// through the wrapped FS and sees what a killed process leaves.
package lazyfs
