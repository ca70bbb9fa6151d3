package egress

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"

	"adaptbot/toolkit"
)

// masker replaces a request's secret values, in every form an answer may
// echo them in, by "[secret:NAME]": plain, URL-encoded (query, path, and as
// the host escaped it), base64 (standard and URL alphabets, padded or not,
// and the part of its encoding that does not depend on where the value
// starts in a longer text), JSON-escaped and hex. What the request gives
// back passes through it before the tool, the model, a trace, a row or a
// failure case sees it.
type masker struct{ r *strings.Replacer }

// minCore is the shortest base64 run, from a value in the middle of a
// longer text, that is masked: shorter ones would mask unrelated text.
const minCore = 6

func newMasker(values map[string]string) *masker {
	type pair struct{ from, to string }
	var pairs []pair
	for name, v := range values {
		to := "[secret:" + name + "]"
		forms := []string{v, url.QueryEscape(v), url.PathEscape(v), escape(v, pathOK), escape(v, queryOK),
			hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v)))}
		if j, err := json.Marshal(v); err == nil {
			forms = append(forms, string(j[1:len(j)-1]))
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			forms = append(forms, enc.EncodeToString([]byte(v)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(v)))
			// In a longer text, v starts at any of three offsets of a
			// base64 group: the characters that come from v alone are
			// the same whatever surrounds it.
			for k := 0; k < 3; k++ {
				s := enc.WithPadding(base64.NoPadding).EncodeToString(append(make([]byte, k), v...))
				from, to := (8*k+5)/6, 8*(k+len(v))/6
				if to-from >= minCore && to <= len(s) {
					forms = append(forms, s[from:to])
				}
			}
		}
		for _, f := range forms {
			if f != "" {
				pairs = append(pairs, pair{f, to})
			}
		}
	}
	// Longest first: a value's encoding is masked whole, not in part.
	slices.SortFunc(pairs, func(a, b pair) int { return len(b.from) - len(a.from) })
	var args []string
	seen := map[string]bool{}
	for _, p := range pairs {
		if !seen[p.from] {
			seen[p.from] = true
			args = append(args, p.from, p.to)
		}
	}
	return &masker{r: strings.NewReplacer(args...)}
}

func (m *masker) string(s string) string {
	if m == nil {
		return s
	}
	return m.r.Replace(s)
}

func (m *masker) response(r toolkit.Response) toolkit.Response {
	if m == nil {
		return r
	}
	r.Body = m.string(r.Body)
	h := make(map[string]string, len(r.Header))
	for k, v := range r.Header {
		h[m.string(k)] = m.string(v)
	}
	r.Header = h
	return r
}

// maskedError is an error whose words are masked; it is still
// toolkit.ErrBlocked when the cause was.
type maskedError struct {
	msg     string
	blocked bool
}

func (e *maskedError) Error() string        { return e.msg }
func (e *maskedError) Is(target error) bool { return e.blocked && target == toolkit.ErrBlocked }

func (m *masker) error(err error) error {
	if m == nil || err == nil {
		return err
	}
	return &maskedError{msg: m.string(err.Error()), blocked: errors.Is(err, toolkit.ErrBlocked)}
}
