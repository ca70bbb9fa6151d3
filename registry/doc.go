// Package registry keeps the list of tools: what tools_registry.json says and
// what is actually in tools/. It is the one writer of both.
//
// Every accepted version of a tool is checked first (the contract, then a
// compile in the sandbox) and snapshotted in the history folder, so a broken
// edit never replaces a working tool: the last good version keeps serving and
// the error is recorded on the entry. The registry file is written atomically
// (temp file, fsync, rename); a corrupt registry file is moved aside and
// reported, never silently overwritten.
//
// The server and the CLI each open a Registry on the same files. Every
// read-modify-write of the registry file holds an exclusive file lock
// (LockFile, beside the registry file) and first merges what the other
// process saved, so neither saves over the other's entries; lock.go says
// what is held when. Claim gives builds the same exclusion per tool name.
//
// Watch follows hand edits in tools/ (and of the registry file) with fsnotify.
package registry
