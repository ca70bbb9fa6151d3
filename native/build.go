package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"adaptbot"
	"adaptbot/clip"
	"adaptbot/contract"
	"adaptbot/sandbox"
	"adaptbot/toolkit"
)

// Source is one tool version to compile: its name and its checked source.
type Source struct {
	Tool   string
	Code   []byte
	digest string
}

// Digest is the version's digest (sandbox.Digest).
func (s Source) Digest() string {
	if s.digest == "" {
		s.digest = sandbox.Digest(s.Tool, s.Code)
	}
	return s.digest
}

// fileNames are the names in a tool's text that reach files or the host
// through the native standard library, where the interpreter gives tools
// none: text/template's ParseFiles, ParseGlob and ParseFS (the interpreted
// Template has no such methods, from Go or from template text).
var fileNames = regexp.MustCompile(`\b(ParseFiles|ParseGlob|ParseFS)\b`)

// Check says why a tool version may not be compiled natively, or nil. It
// runs the contract's checks (the import allowlist: no unsafe, no cgo, no
// os, ...), and refuses what a compiler would honour and the interpreter
// does not: compiler directives (//go:linkname, //go:embed, ...), build
// constraints, and the file-reading functions of text/template.
func Check(tool string, code []byte) error {
	if _, err := contract.Parse(tool, code); err != nil {
		return fmt.Errorf("the contract refuses it: %w", err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, tool+".go", code, parser.ParseComments)
	if err != nil {
		return err
	}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			text := strings.TrimSpace(c.Text)
			if strings.HasPrefix(text, "//go:") || strings.HasPrefix(text, "//line") || strings.HasPrefix(text, "/*line") ||
				strings.HasPrefix(text, "// +build") || strings.HasPrefix(text, "//export") {
				return fmt.Errorf("%s: the compiler directive %q is not allowed natively", fset.Position(c.Pos()), clip.String(text, 60))
			}
		}
	}
	for _, imp := range f.Imports {
		if imp.Path.Value == `"C"` {
			return errors.New(`import "C" (cgo) is not allowed`)
		}
	}
	if m := fileNames.Find(code); m != nil {
		return fmt.Errorf("it names text/template's %s, which reads files natively; the interpreter gives tools no such function", m)
	}
	if f.Name.Name != tool {
		return fmt.Errorf("its package is %s, not %s", f.Name.Name, tool)
	}
	var execute bool
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "Execute" {
			execute = true
		}
	}
	if !execute {
		return errors.New("it has no Execute function")
	}
	return nil
}

// Toolchain finds the go command: on PATH (as getenv gives it), or in
// GOROOT's bin. It returns its absolute path (a relative folder on PATH is
// the working folder's), or "" when there is none.
func Toolchain(getenv func(string) string) string {
	var candidates []string
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir != "" {
			candidates = append(candidates, filepath.Join(dir, "go"))
		}
	}
	if root := getenv("GOROOT"); root != "" {
		candidates = append(candidates, filepath.Join(root, "bin", "go"))
	}
	for _, p := range candidates {
		if abs, err := filepath.Abs(p); err == nil && isExecutable(abs) {
			return abs
		}
	}
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// goVersion is the go directive of AdaptBot's go.mod: tools compile natively
// with the language version they are checked with.
func goVersion() string {
	for _, line := range strings.Split(string(adaptbot.GoMod), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	return "1.22"
}

// runtimeFiles are the files of a native worker program's module that are
// not its tools': the go.mod, and copies of sandbox's worker side, toolkit,
// clip and the root's Failure words, the very source this binary was built
// from. runtimeID names them.
func runtimeFiles() map[string][]byte {
	files := map[string][]byte{
		"go.mod":       fmt.Appendf(nil, "module adaptbot\n\ngo %s\n", goVersion()),
		"clip/clip.go": clip.Source(),
		"failure.go":   adaptbot.FailureSource,
	}
	for name, b := range sandbox.NativeSource() {
		files["sandbox/"+name] = b
	}
	for name, b := range toolkit.PackageSource() {
		files["toolkit/"+name] = b
	}
	return files
}

// runtimeID is a digest of runtimeFiles and the Go toolchain: a native
// binary built from another AdaptBot's worker side (an older protocol,
// other failure words) or by another Go is never run by this one.
var runtimeID = sync.OnceValue(func() string {
	files := runtimeFiles()
	names := slices.Sorted(maps.Keys(files))
	var all bytes.Buffer
	fmt.Fprintf(&all, "%s\n", runtime.Version())
	for _, n := range names {
		fmt.Fprintf(&all, "%s %d\n", n, len(files[n]))
		all.Write(files[n])
	}
	return adaptbot.Digest(all.Bytes())[:16]
})

// writeModule writes, under dir, the Go module of a native worker program
// serving tools: package main (in worker/, since the module's root is
// package adaptbot), the tools' packages (each with one added file
// importing package sandbox, so that the worker confines itself before any
// tool's initialiser runs), and the runtime's files (runtimeFiles).
func writeModule(dir string, tools []Source) error {
	files := runtimeFiles()
	var main bytes.Buffer
	main.WriteString("// Command worker is a native worker program, written by package native.\npackage main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"os\"\n\n\t\"adaptbot/sandbox\"\n")
	for i, t := range tools {
		fmt.Fprintf(&main, "\tt%d %q\n", i, sandbox.NativeToolPath+t.Tool)
		pkg := strings.TrimSuffix(sandbox.NativeToolPath, "/") + "/" + t.Tool
		files[strings.TrimPrefix(pkg, "adaptbot/")+"/"+t.Tool+".go"] = t.Code
		files[strings.TrimPrefix(pkg, "adaptbot/")+"/zz_adaptbot_native.go"] = fmt.Appendf(nil,
			"package %s\n\n// The worker confines itself in package sandbox's initialiser, before this package's.\nimport _ \"adaptbot/sandbox\"\n", t.Tool)
	}
	main.WriteString(")\n\nfunc main() {\n\terr := sandbox.ServeNative(\n")
	for i, t := range tools {
		fmt.Fprintf(&main, "\t\tsandbox.NativeTool{Name: %q, Hash: %q, Invoke: func(ctx context.Context, decode func(any) error) (any, error) {\n\t\t\tvar in t%d.Input\n\t\t\tif err := decode(&in); err != nil {\n\t\t\t\treturn nil, err\n\t\t\t}\n\t\t\treturn t%d.Execute(ctx, in)\n\t\t}},\n", t.Tool, t.Digest(), i, i)
	}
	main.WriteString("\t)\n\tif err != nil {\n\t\tfmt.Fprintln(os.Stderr, err)\n\t\tos.Exit(1)\n\t}\n}\n")
	files["worker/main.go"] = main.Bytes() // the root is package adaptbot

	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// compile builds the native worker program of tools into out, with the go
// command at goCmd, offline, without cgo, and with a build cache and Go
// folders under home (the cache in cache, if set), which belong to the native builder alone. Its
// environment is nothing of the server's but PATH's folder of go itself.
func compile(ctx context.Context, goCmd, home, cache string, tools []Source, out string) error {
	for _, t := range tools {
		if err := Check(t.Tool, t.Code); err != nil {
			return fmt.Errorf("tool %s: %w", t.Tool, err)
		}
	}
	if cache == "" {
		cache = filepath.Join(home, "cache")
	}
	// The go command runs in the module's folder, not ours: a relative
	// folder would name another one (or be refused, as GOPATH is).
	for _, p := range []string{goCmd, home, cache, out} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("native build: %q is not an absolute path", p)
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	src, err := os.MkdirTemp(home, "src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := writeModule(src, tools); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=false", "-tags", sandbox.NativeBuildTag,
		"-ldflags=-s -w", "-o", out, "./worker")
	cmd.Dir = src
	cmd.Env = []string{
		"PATH=" + filepath.Dir(goCmd),
		"HOME=" + home,
		"GOCACHE=" + cache,
		"GOPATH=" + filepath.Join(home, "gopath"),
		"GOMODCACHE=" + filepath.Join(home, "gopath", "mod"),
		"GOTMPDIR=" + src,
		"CGO_ENABLED=0",
		"GOPROXY=off",
		"GOFLAGS=-mod=mod",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOENV=off",
		"GOTELEMETRY=off",
		"GOOS=" + runtime.GOOS,
		"GOARCH=" + runtime.GOARCH,
	}
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return &buildError{err: err, output: clip.String(strings.TrimSpace(stderr.String()), 2000)}
	}
	return nil
}

// buildError is a go command that failed: its error and what it printed,
// for the log (buildFailure says it in words for people).
type buildError struct {
	err    error
	output string
}

func (e *buildError) Error() string { return fmt.Sprintf("go build: %v: %s", e.err, e.output) }
func (e *buildError) Unwrap() error { return e.err }

// workerFailure is the reason shown for a native program that was built
// but did not start.
const workerFailure = "its native program was built but did not start, so it keeps running interpreted " +
	"(the same results, only slower). The server's log says why, under \"native: the native worker did not start\"; " +
	"ADAPTBOT_NATIVE=off stops native builds."

// buildFailure says in words, for a tool's page and the API, why a native
// build failed and what to do; the go command's own output goes to the
// server's log. dir is the native builder's folder.
func buildFailure(err error, dir string) string {
	const after = " Until then it keeps running interpreted: the same results, only slower. ADAPTBOT_NATIVE=off stops native builds."
	var be *buildError
	output := ""
	if errors.As(err, &be) {
		output = be.output
	}
	switch {
	case be != nil && output == "" && (errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist)):
		return "its native build could not start the go command. Install Go (go.dev/dl), or put its bin folder on PATH, and restart AdaptBot." + after
	case strings.Contains(output, "requires go >="):
		return fmt.Sprintf("the Go on this machine is older than AdaptBot's go.mod asks (go %s). Install Go %s or newer and restart AdaptBot.", goVersion(), goVersion()) + after
	case strings.Contains(output, "no space left on device"):
		return fmt.Sprintf("its native build ran out of disk space in %s. Free some space; the next call of the tool builds it again.", dir) + after
	case strings.Contains(output, "permission denied") || errors.Is(err, os.ErrPermission):
		return fmt.Sprintf("its native build may not write in %s. Let the user who runs AdaptBot write there, and restart AdaptBot.", dir) + after
	case strings.Contains(err.Error(), "not an absolute path") || strings.Contains(output, "must be absolute"):
		return "its native build was given a relative folder, which is a bug in AdaptBot: please report it, with the server's log." + after
	}
	return "its native build failed. The server's log has the go command's output, under \"native: build failed\"; " +
		"check that `go build` works on this machine for the user who runs AdaptBot." + after
}
