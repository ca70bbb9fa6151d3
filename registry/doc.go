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
// One process owns the files: the server. Other processes that serve the
// tools (`adaptbot mcp` over stdio, `adaptbot tools test`) open the registry
// with Options.ReadOnly, write nothing and follow the owner's saves; the CLI
// changes tools through the server's HTTP API. So there is no file lock and
// no merge of concurrent writers: Registry.write orders the changes.
//
// Watch follows hand edits in tools/ (and of the registry file) with fsnotify.
package registry
