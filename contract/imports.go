package contract

import "sort"

// ToolkitPath is the import path of the host package that tools use for anything
// beyond pure computation (HTTP under an egress policy, for one).
const ToolkitPath = "adaptbot/toolkit"

// allowed lists the standard packages a tool may import. It is the single source
// of truth: the sandbox builds its symbol table from it, so a package that is not
// here cannot be loaded even if a check were skipped. Nothing here touches files,
// processes, the environment or raw sockets.
var allowed = map[string]bool{
	"bufio":           true,
	"bytes":           true,
	"cmp":             true,
	"container/heap":  true,
	"container/list":  true,
	"context":         true,
	"crypto/md5":      true,
	"crypto/sha1":     true,
	"crypto/sha256":   true,
	"crypto/sha512":   true,
	"encoding/base64": true,
	"encoding/csv":    true,
	"encoding/hex":    true,
	"encoding/json":   true,
	"errors":          true,
	"fmt":             true,
	"hash/crc32":      true,
	"hash/fnv":        true,
	"html":            true,
	"maps":            true, // issue 29: Yaegi source, third_party/yaegi/stdlib/generic
	"io":              true,
	"math":            true,
	"math/big":        true,
	"math/bits":       true,
	"math/cmplx":      true,
	"math/rand":       true,
	"net/url":         true,
	"path":            true,
	"regexp":          true,
	"slices":          true, // issue 29: Yaegi source, third_party/yaegi/stdlib/generic
	"sort":            true,
	"strconv":         true,
	"strings":         true,
	"sync":            true,
	"sync/atomic":     true,
	"text/template":   true,
	"time":            true,
	"unicode":         true,
	"unicode/utf16":   true,
	"unicode/utf8":    true,
	ToolkitPath:       true,
}

// Allowed reports whether a tool may import path.
func Allowed(path string) bool { return allowed[path] }

// AllowedImports returns the import allowlist, sorted.
func AllowedImports() []string {
	out := make([]string, 0, len(allowed))
	for p := range allowed {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
