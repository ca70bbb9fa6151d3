package text_stats

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"adaptbot/contract/contracttest"
)

func TestExecute(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Output
	}{
		{"one sentence", "Hello world.", Output{
			Words: 2, UniqueWords: 2, Characters: 12, CharactersNoSpaces: 11, Sentences: 1, Paragraphs: 1,
			AverageWordLength: 5, ReadingTime: "1 s", ReadingTimeSeconds: 1, SpeakingTime: "1 s", SpeakingTimeSeconds: 1,
		}},
		{"two paragraphs", "Hello world. This is a test! Is it? Yes.\n\nSecond paragraph, with don't and well-known words and 3.14 pi.", Output{
			Words: 19, UniqueWords: 17, Characters: 104, CharactersNoSpaces: 85, Sentences: 5, Paragraphs: 2,
			AverageWordLength: 4, ReadingTime: "6 s", ReadingTimeSeconds: 6, SpeakingTime: "9 s", SpeakingTimeSeconds: 9,
		}},
		{"accents and Greek", "Ünïcödé café naïve. Ελληνικά κείμενα.", Output{
			Words: 5, UniqueWords: 5, Characters: 37, CharactersNoSpaces: 33, Sentences: 2, Paragraphs: 1,
			AverageWordLength: 6.2, ReadingTime: "2 s", ReadingTimeSeconds: 2, SpeakingTime: "2 s", SpeakingTimeSeconds: 2,
		}},
		{"Chinese", "我爱你。你好！", Output{
			Words: 5, UniqueWords: 4, Characters: 7, CharactersNoSpaces: 7, Sentences: 2, Paragraphs: 1,
			AverageWordLength: 1, ReadingTime: "2 s", ReadingTimeSeconds: 2, SpeakingTime: "2 s", SpeakingTimeSeconds: 2,
		}},
		{"CRLF line ends count once", "One.\r\n\r\nTwo.\r\n", Output{
			Words: 2, UniqueWords: 2, Characters: 11, CharactersNoSpaces: 8, Sentences: 2, Paragraphs: 2,
			AverageWordLength: 3, ReadingTime: "1 s", ReadingTimeSeconds: 1, SpeakingTime: "1 s", SpeakingTimeSeconds: 1,
		}},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Text: tt.text})
		if err != nil {
			t.Errorf("%s: error: %v", tt.name, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
		contracttest.CheckResult(t, "text_stats", got)
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"don't stop", []string{"don't", "stop"}},
		{"a well-known fact", []string{"a", "well-known", "fact"}},
		{"pi is 3.14, e is 2.718.", []string{"pi", "is", "3.14", "e", "is", "2.718"}},
		{"see example.com or mail me@example.com", []string{"see", "example.com", "or", "mail", "me@example.com"}},
		{`"Quoted," (bracketed) ¿qué?`, []string{"Quoted", "bracketed", "qué"}},
		{"this—that – other", []string{"this", "that", "other"}},
		{"- * 42 ...", []string{"42"}},
		{"Hello世界!", []string{"Hello", "世", "界"}},
		{"日本語のテキスト", []string{"日", "本", "語", "の", "テ", "キ", "ス", "ト"}},
		{"한국어 텍스트", []string{"한국어", "텍스트"}},
		{"cafe\u0301 naïve", []string{"cafe\u0301", "naïve"}},
		{"emoji 🎉 party", []string{"emoji", "party"}},
		{"non\u00a0breaking\u2003em\vspace\u3000ideographic", []string{"non", "breaking", "em", "space", "ideographic"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := words(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("words(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestSentences(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"One. Two! Three? Four", 4},
		{"No final point", 1},
		{"Pi is 3.14 exactly. See example.com now.", 2},
		{"Wait... What?! Really?!", 3},
		{`He said "stop." Then he left.`, 2},
		{"(It ended.) New start.", 2},
		{"Dr. Smith arrived.", 2}, // abbreviations are counted as ends
		{"...", 0},
		{"!!! ??? Hello", 1},
		{"これはペンです。あれは本です。", 2},
		{"Line one\nline two", 1},
	}
	for _, tt := range tests {
		if got := sentences(tt.text); got != tt.want {
			t.Errorf("sentences(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestParagraphs(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"one", 1},
		{"one\ntwo lines, same paragraph", 1},
		{"one\n\ntwo", 2},
		{"\n\n  one\n \t \n\n\ntwo\n\nthree\n\n", 3},
	}
	for _, tt := range tests {
		if got := paragraphs(tt.text); got != tt.want {
			t.Errorf("paragraphs(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestReadingAndSpeakingTime(t *testing.T) {
	tests := []struct {
		words                     int
		reading, speaking         string
		readingSecs, speakingSecs int
	}{
		{200, "1 min", "1 min 32 s", 60, 92},
		{130, "39 s", "1 min", 39, 60},
		{450, "2 min 15 s", "3 min 28 s", 135, 208},
		{13000, "1 h 5 min", "1 h 40 min", 3900, 6000},
		{12000, "1 h", "1 h 32 min", 3600, 5538},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Text: strings.Repeat("word ", tt.words)})
		if err != nil {
			t.Fatal(err)
		}
		if got.Words != tt.words || got.ReadingTime != tt.reading || got.SpeakingTime != tt.speaking ||
			got.ReadingTimeSeconds != tt.readingSecs || got.SpeakingTimeSeconds != tt.speakingSecs {
			t.Errorf("%d words: got %d words, reading %q (%d s), speaking %q (%d s); want reading %q (%d s), speaking %q (%d s)",
				tt.words, got.Words, got.ReadingTime, got.ReadingTimeSeconds, got.SpeakingTime, got.SpeakingTimeSeconds,
				tt.reading, tt.readingSecs, tt.speaking, tt.speakingSecs)
		}
		if got.UniqueWords != 1 {
			t.Errorf("%d words: unique = %d, want 1", tt.words, got.UniqueWords)
		}
	}
}

func TestEmptyText(t *testing.T) {
	for _, text := range []string{"", "  \n\t "} {
		if _, err := Execute(context.Background(), Input{Text: text}); err == nil || !strings.Contains(err.Error(), "the text is empty") {
			t.Errorf("Execute(%q) error = %v, want \"the text is empty\"", text, err)
		}
	}
}

func TestContract(t *testing.T) {
	contracttest.Check(t, "text_stats", contracttest.Want{
		Category:    "text",
		Description: "Counts the words, characters, sentences and paragraphs",
		Properties:  map[string]string{"text": "string"},
		Required:    []string{"text"},
		Output: map[string]string{
			"words": "integer", "unique_words": "integer", "characters": "integer", "characters_no_spaces": "integer",
			"sentences": "integer", "paragraphs": "integer", "average_word_length": "number",
			"reading_time": "string", "reading_time_seconds": "integer", "speaking_time": "string", "speaking_time_seconds": "integer",
		},
	})
}
