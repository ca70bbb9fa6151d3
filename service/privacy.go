package service

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/identity"
	"adaptbot/registry"
)

// Private by author: a person's words (what they asked, the arguments
// their calls sent, what they said of an answer) are shown to them and to
// admins alone, whichever door asks. Traces keep their author (requests.go);
// this file is the rule for the other stores that quote people: failure
// cases, repairs made from them, version notes and skills' chats. Every
// operation that returns them passes them through here, so no door can
// forget.

// withheldMark stands for words the reader may not see.
const withheldMark = "[withheld]"

// minQuoted is the shortest argument value masked where it is quoted: a
// shorter one ("1", "yes") says nothing of its author and is everywhere.
const minQuoted = 4

// caseFor returns c as who may read it: its arguments to their authors,
// its comment to its writer, its request to its maker, all of them to
// admins; to anyone else, the kind, the error (with the arguments'
// values it quotes withheld), the counts, the versions and the status.
// The authors themselves are shown to admins alone.
func caseFor(who identity.Identity, c failures.Case) failures.Case {
	if who.Can(identity.ReadAll) {
		return c
	}
	mine := who.Known() && who.Pseudonym != "" && slices.Contains(c.Authors, who.Pseudonym)
	if !mine {
		c.Message = newWithholder([]failures.Case{c}, who).mask(c.Message)
		c.Args, c.Expect, c.Withheld = nil, "", true
	}
	if c.Comment != "" && !who.Owns(c.CommentBy) {
		c.Comment, c.Withheld = "", true
	}
	if c.RequestID != "" && !who.Owns(c.RequestBy) {
		c.RequestID, c.Withheld = "", true
	}
	c.Authors, c.CommentBy, c.RequestBy = nil, "", ""
	return c
}

// withholder masks, in text a reader gets, the words of cases that are not
// the reader's: their arguments' string values and their comments.
type withholder struct{ r *strings.Replacer }

// newWithholder collects the words of cases that who may not read; nil
// (which masks nothing) for an admin or when there are none.
func newWithholder(cases []failures.Case, who identity.Identity) *withholder {
	if who.Can(identity.ReadAll) {
		return nil
	}
	var words []string
	for _, c := range cases {
		if !(who.Pseudonym != "" && slices.Contains(c.Authors, who.Pseudonym)) {
			words = appendStrings(words, c.Args)
		}
		if c.Comment != "" && !who.Owns(c.CommentBy) {
			words = append(words, c.Comment)
		}
	}
	return withholding(words)
}

// withholding is a withholder of words; nil when there are none.
func withholding(words []string) *withholder {
	if len(words) == 0 {
		return nil
	}
	// Longest first, so that a value is masked whole, not around a
	// shorter one inside it.
	slices.SortFunc(words, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	pairs := make([]string, 0, 2*len(words))
	for _, w := range slices.Compact(words) {
		pairs = append(pairs, w, withheldMark)
	}
	return &withholder{strings.NewReplacer(pairs...)}
}

// mask returns text with the withheld words replaced.
func (w *withholder) mask(text string) string {
	if w == nil || text == "" {
		return text
	}
	return w.r.Replace(text)
}

// maskJSON returns v, a JSON-encodable value, with the withheld words
// replaced in every string it holds (never in its field names). A value
// that does not go through JSON comes back as its zero, never unmasked.
func maskJSON[T any](w *withholder, v T) T {
	if w == nil {
		return v
	}
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out
	}
	var tree any
	if json.Unmarshal(b, &tree) != nil {
		return out
	}
	b, err = json.Marshal(w.maskTree(tree))
	if err != nil || json.Unmarshal(b, &out) != nil {
		var zero T
		return zero
	}
	return out
}

// maskTree masks the strings of a decoded JSON value.
func (w *withholder) maskTree(v any) any {
	switch x := v.(type) {
	case string:
		return w.mask(x)
	case []any:
		for i, e := range x {
			x[i] = w.maskTree(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = w.maskTree(e)
		}
	}
	return v
}

// minQuotedWord is the shortest word of a value masked on its own: long
// enough that it is seldom a word of the error's own.
const minQuotedWord = 6

func notWordRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-'
}

// appendStrings appends the string values of at least minQuoted bytes
// found anywhere in the JSON args (a JSON string itself, for arguments
// kept cut), and their words of at least minQuotedWord.
func appendStrings(out []string, args json.RawMessage) []string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return out
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if len(x) >= minQuoted {
				out = append(out, x)
			}
			// An error may quote a word of a value, not all of it.
			for _, w := range strings.FieldsFunc(x, notWordRune) {
				if len(w) >= minQuotedWord && len(w) < len(x) {
					out = append(out, w)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// repairFor returns a repair's result as who may read it: the cases who
// did not author lose their input and output, and the words of those
// cases are withheld wherever the result quotes them (the model's errors,
// its source, the summary). The model was given the cases whole.
func repairFor(who identity.Identity, cases []failures.Case, res *generator.Result) *generator.Result {
	w := newWithholder(cases, who)
	if res == nil || w == nil {
		return res
	}
	authored := map[string]bool{}
	for _, c := range cases {
		authored[c.ID] = who.Pseudonym != "" && slices.Contains(c.Authors, who.Pseudonym)
	}
	out := *res
	out.Cases = slices.Clone(res.Cases)
	for i, r := range out.Cases {
		if !authored[r.ID] {
			r.Input, r.Output = nil, ""
			out.Cases[i] = r
		}
	}
	masked := maskJSON(w, out)
	masked.Duration = res.Duration // not in the JSON
	return &masked
}

// progressFor wraps a repair's progress so that who reads its events
// without the words of cases who did not author.
func progressFor(who identity.Identity, cases []failures.Case, progress func(generator.Event)) func(generator.Event) {
	w := newWithholder(cases, who)
	if progress == nil || w == nil {
		return progress
	}
	return func(ev generator.Event) { progress(maskJSON(w, ev)) }
}

// noteFor returns a version's note as who may read it. A note's first
// line says what the version changed; the lines after it quote people (a
// repair's cases with their inputs and errors, a skill's chats), so they
// are for admins.
func noteFor(who identity.Identity, note string) string {
	if who.Can(identity.ReadAll) {
		return note
	}
	first, rest, _ := strings.Cut(note, "\n")
	if strings.TrimSpace(rest) == "" {
		return first
	}
	return first + "\n(the details quote people's requests: admins see them)"
}

// repairsFor returns a tool's repair records as who may read them: a
// repair's error may quote the cases it was given, whose words are
// withheld as far as the cases still kept tell them.
func repairsFor(who identity.Identity, cases []failures.Case, rs []failures.Repair) []failures.Repair {
	w := newWithholder(cases, who)
	if w == nil {
		return rs
	}
	out := slices.Clone(rs)
	for i := range out {
		out[i].Error = w.mask(out[i].Error)
	}
	return out
}

// versionsFor returns vs with each note as who may read it.
func versionsFor(who identity.Identity, vs []registry.Version) []registry.Version {
	for i := range vs {
		vs[i].Note = noteFor(who, vs[i].Note)
	}
	return vs
}
