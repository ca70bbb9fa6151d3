// Package generator makes AdaptBot self-extending: it creates, modifies and
// deletes tools at a user's request, with code a language model writes and a
// gate that no code reaches tools/ without passing.
//
// A build runs through a graph compiled once, in New:
//
//	decide ─┬─ create ─┐
//	        ├─ modify ─┼─ check ─┬─ register ── end
//	        │  repair ─┘    ↑    ├─ repair (back to check)
//	        ├─ delete ── end     └─ reject ── end
//	        └─ reject ── end
//
// decide asks the model (structured output) for CREATE, MODIFY or DELETE, a
// snake_case name and a summary, unless the request names both; a plain
// question (from the Create Tool button) becomes a CREATE of a generic tool
// for that kind of question. create and modify ask for the tool through a
// forced write_tool call: source, description, category, examples. check is
// the gate: extract the code from whatever the model sent, parse and gofmt it,
// check the contract and the import allowlist, compile it in the sandbox, and
// run every example there under a timeout. Any failure goes back to the model
// with the exact errors, up to Options.MaxAttempts tries in all; every try is
// kept in Result.Log. register saves the checked tool through registry.Put,
// which writes atomically and keeps every version in history (Rollback
// restores any of them); delete moves the tool into that history.
//
// Decisions made here, on purpose:
//   - A wrong package name ("package main") is fixed, not sent back: the name
//     is decided before the code is written, so renaming is mechanical and
//     costs no model call. The fix is noted in Attempt.Fixed, as is a package
//     comment added from the description.
//   - A CREATE of a name that exists is refused with a clear message, never
//     turned into a MODIFY: replacing a working tool should be asked for.
//   - A MODIFY whose candidate fails the gate changes nothing: the previous
//     version keeps serving.
//   - Builds of the same tool exclude each other (the second gets
//     ErrConflict at once); builds of different tools run in parallel.
//     Builds run in one process, the server: the CLI asks it.
//
// Tools build on tools (compose.go): the write prompt lists the tools the
// new one may call (Options.Finder's shortlist, with their arguments); the
// gate refuses a call of a tool that does not exist or that uses this one,
// and runs the examples with the real callees (Options.Tools). A modify, and
// a Rollback, must also pass the examples of every tool that uses the tool,
// directly or through others, with the new version in its place, before it
// serves; with review on it waits, with the report as the tool's warning. A
// delete of a tool others use needs Request.Force.
// Repair (repair.go) is a modify driven by failure cases seen in real use:
// the same flow, with every failing case run after the gate (a result or a
// clear error, never a panic or a timeout) and the stored examples kept as
// they are; the cases that now give a result become examples.
//
// Tools that act (secrets.go, docs/acting.md): the write prompt teaches
// toolkit.Do, toolkit.PostJSON, {{secret:NAME}}, const Hosts and the http
// exchanges an example carries, and lists the secrets the person asking
// can use, by name and host (Options.Secrets), never their values. The
// gate answers such a tool's requests from its examples' exchanges
// (egress.Replay): no example reaches the network or needs a value, so a
// tool that needs a secret the person lacks is still built, and
// Result.MissingSecrets says which to set and how. A plan says the hosts
// and secrets a tool will need (Plan.Hosts, Plan.Secrets).
//
// The examples are stored beside the tool (registry.ExamplesFile) and re-run
// by TestTool (`adaptbot tools test <name>`) and, through RetestOnChange,
// whenever a tool's source changes outside a build.
//
// The package must not write tools/ itself (only the registry does), run tool
// code outside the sandbox, or know about HTTP or the benchmarks file: the
// caller streams the Events and logs a row from the Result.
package generator
