// Package contract defines what a tool is: one Go package in tools/<name>/<name>.go
// with a package comment (its description), an Input struct (its parameters) and
//
//	func Execute(ctx context.Context, in Input) (T, error)
//
// Parse checks a source file against that contract without running it: the name,
// the package clause, the imports (an explicit allowlist), the signature of Execute,
// and it derives the JSON schema of the parameters from Input. Calls reads which tools
// a tool calls (toolkit.Call and toolkit.CallJSON, named by string literals). It never
// compiles or runs code; that is the sandbox's job.
package contract
