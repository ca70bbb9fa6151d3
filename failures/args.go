package failures

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"

	"adaptbot/clip"
)

// What a case keeps of a call: its arguments, capped and compacted, the
// hash that names the case, and its authors.

// addAuthors returns have with each of more added (moved to the end if
// there already), keeping the latest MaxAuthors.
func addAuthors(have, more []string) []string {
	for _, a := range more {
		if a == "" {
			continue
		}
		if i := slices.Index(have, a); i >= 0 {
			have = slices.Delete(slices.Clone(have), i, i+1)
		}
		have = append(slices.Clip(have), a)
	}
	if len(have) > MaxAuthors {
		have = have[len(have)-MaxAuthors:]
	}
	return have
}

// capArgs returns the arguments as a case keeps them, their size, and
// whether they are kept whole: a JSON object of at most MaxArgs bytes is
// kept compact; anything else as a JSON string of its first MaxArgs bytes.
// valid says the arguments are known to be JSON (they passed a schema).
func capArgs(args json.RawMessage, valid bool) (json.RawMessage, int, bool) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if len(args) <= MaxArgs && args[0] == '{' && args[len(args)-1] == '}' {
		if valid {
			return compactValid(args), len(args), true
		}
		var b bytes.Buffer
		if json.Compact(&b, args) == nil {
			return b.Bytes(), len(args), true
		}
	}
	text, _ := json.Marshal(clip.String(string(args), MaxArgs))
	return text, len(args), false
}

// compactValid removes the spaces between the tokens of valid JSON, as
// json.Compact does, without validating it again: a quarter of the cost.
func compactValid(src []byte) []byte {
	dst := make([]byte, 0, len(src))
	in, esc := false, false
	for _, c := range src {
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				in = false
			}
		case c == '"':
			in = true
		case c == ' ', c == '\t', c == '\n', c == '\r':
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// caseID hashes what makes a case: the tool, its version and the arguments
// as kept.
func caseID(tool string, version int, args []byte) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, int64(version), 10))
	h.Write([]byte{0})
	h.Write(args)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:8])
}
