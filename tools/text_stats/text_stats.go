// Package text_stats counts the words, characters, sentences and paragraphs of
// a text and estimates how long it takes to read (at 200 words a minute) and to
// speak aloud (at 130 words a minute). It is Unicode-aware: characters are
// Unicode code points; words are what white space or dashes separate, as a
// word processor counts them ("don't", "well-known", "3.14" and "example.com"
// are one word each), in any script, except that each Chinese or Japanese
// character counts as a word, since those scripts do not space words.
// Sentence counts are approximate: abbreviations such as "Dr." end one.
package text_stats

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Category is the tool's domain.
const Category = "text"

// Input is the text to measure.
type Input struct {
	Text string `json:"text" jsonschema:"the text to analyze, verbatim"`
}

// Output holds the counts and estimates.
type Output struct {
	Words               int     `json:"words"`
	UniqueWords         int     `json:"unique_words"`         // distinct words, ignoring case
	Characters          int     `json:"characters"`           // Unicode code points, spaces and line breaks included
	CharactersNoSpaces  int     `json:"characters_no_spaces"` // the same without white space
	Sentences           int     `json:"sentences"`
	Paragraphs          int     `json:"paragraphs"`          // blocks separated by blank lines
	AverageWordLength   float64 `json:"average_word_length"` // letters and digits per word, to two decimals
	ReadingTime         string  `json:"reading_time"`        // at 200 words a minute, e.g. "2 min 15 s"
	ReadingTimeSeconds  int     `json:"reading_time_seconds"`
	SpeakingTime        string  `json:"speaking_time"` // at 130 words a minute
	SpeakingTimeSeconds int     `json:"speaking_time_seconds"`
}

// Reading and speaking speeds, in words a minute.
const (
	readingWPM  = 200
	speakingWPM = 130
)

// Execute measures in.Text. The rune-by-rune scanning is left to the regexp
// and strings packages, which run natively: under Yaegi an interpreted loop
// over every rune is about a hundred times slower, and ranging over a string
// even takes quadratic time.
func Execute(ctx context.Context, in Input) (Output, error) {
	if strings.TrimSpace(in.Text) == "" {
		return Output{}, errors.New("the text is empty: pass the text to analyze in the text field")
	}
	text := strings.ReplaceAll(in.Text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")

	var out Output
	out.Characters = utf8.RuneCountInString(text)
	out.CharactersNoSpaces = utf8.RuneCountInString(strings.Join(strings.Fields(text), ""))

	ws := words(text)
	out.Words = len(ws)
	seen := map[string]bool{}
	for _, w := range ws {
		seen[strings.ToLower(w)] = true
	}
	out.UniqueWords = len(seen)
	if out.Words > 0 {
		// Every letter and digit of the text is in some word.
		letters := out.Characters - utf8.RuneCountInString(letterOrDigit.ReplaceAllString(text, ""))
		out.AverageWordLength = math.Round(float64(letters)/float64(out.Words)*100) / 100
	}

	out.Sentences = sentences(text)
	out.Paragraphs = paragraphs(text)
	out.ReadingTimeSeconds = int(math.Round(float64(out.Words) * 60 / readingWPM))
	out.ReadingTime = duration(out.ReadingTimeSeconds)
	out.SpeakingTimeSeconds = int(math.Round(float64(out.Words) * 60 / speakingWPM))
	out.SpeakingTime = duration(out.SpeakingTimeSeconds)
	return out, nil
}

// The character classes, as regular expressions. Separators are the runes
// unicode.IsSpace accepts plus the em and en dashes; word runes are letters,
// digits and combining marks (the accent of a decomposed é).
var (
	letterOrDigit = regexp.MustCompile(`[\p{L}\p{N}]`)
	wordRune      = regexp.MustCompile(`[\p{L}\p{N}\p{M}]`)
	ideograph     = regexp.MustCompile(`[\p{Han}\p{Hiragana}\p{Katakana}]`)
	// word is a run between separators, trimmed to start and end with a word
	// rune: "(don't)" holds the word "don't", "..." none.
	word = regexp.MustCompile(`[\p{L}\p{N}\p{M}](?:[^\t\n\v\f\r\x{85}\p{Z}—–]*[\p{L}\p{N}\p{M}])?`)
	// sentenceEnd is . ! ? … or ‽, maybe followed by closing quotes or
	// brackets, then white space or the end (so that 3.14 and example.com
	// end nothing); or 。！？, which need no space after them.
	sentenceEnd = regexp.MustCompile(`[.!?…‽]+["'”’»)\]}」』]*(?:[\t\n\v\f\r\x{85}\p{Z}]|$)|[。！？｡][.!?…‽。！？｡]*["'”’»)\]}」』]*`)
)

// words splits text into its words: the pieces between white space and
// dashes (— and –) that hold a letter or digit, with the punctuation around
// them trimmed, and each Chinese or Japanese character on its own.
func words(text string) []string {
	return word.FindAllString(ideograph.ReplaceAllString(text, " $0 "), -1)
}

// sentences counts the pieces of text between sentence ends that hold a word.
func sentences(text string) int {
	n := 0
	for _, s := range sentenceEnd.Split(text, -1) {
		if wordRune.MatchString(s) {
			n++
		}
	}
	return n
}

// paragraphs counts the blocks of non-blank lines.
func paragraphs(text string) int {
	n := 0
	inside := false
	for _, line := range strings.Split(text, "\n") {
		blank := strings.TrimSpace(line) == ""
		if !blank && !inside {
			n++
		}
		inside = !blank
	}
	return n
}

// duration writes seconds as "45 s", "2 min 15 s" or "1 h 5 min".
func duration(secs int) string {
	switch {
	case secs < 60:
		return fmt.Sprintf("%d s", secs)
	case secs < 3600 && secs%60 == 0:
		return fmt.Sprintf("%d min", secs/60)
	case secs < 3600:
		return fmt.Sprintf("%d min %d s", secs/60, secs%60)
	}
	mins := (secs + 30) / 60
	if mins%60 == 0 {
		return fmt.Sprintf("%d h", mins/60)
	}
	return fmt.Sprintf("%d h %d min", mins/60, mins%60)
}
