package router

import (
	"slices"
	"testing"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"snake_case", "get_current_stock_price", []string{"get", "current", "stock", "price"}},
		{"kebab-case", "get-weread-rank", []string{"get", "weread", "rank"}},
		{"camelCase", "getCanvasPng", []string{"get", "canva", "png", "getcanvaspng"}},
		{"acronym", "HTTPServer", []string{"http", "server", "httpserver"}},
		{"PascalCase", "PowerPoint", []string{"power", "point", "powerpoint"}},
		{"digits stay", "base64 12306 mp3", []string{"base64", "12306", "mp3"}},
		{"stemming", "Searching searches searched", []string{"search", "search", "search"}},
		{"stop words and single letters", "the a of it and x", nil},
		{"punctuation and paths", "/root/pdf/report.pdf, please!", []string{"root", "pdf", "report", "pdf", "pleas"}},
		{"CJK bigrams", "获取股票价格", []string{"获取", "取股", "股票", "票价", "价格"}},
		{"lone CJK character", "股", []string{"股"}},
		{"CJK mixed with Latin", "将SVG图像插入", []string{"将", "svg", "图像", "像插", "插入"}},
		{"Japanese kana", "ファイル", []string{"ファ", "ァイ", "イル"}},
		{"accented letters", "Café Überweisung", []string{"café", "überweisung"}},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tokens(tt.in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("tokens(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitCamel(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"getCanvasPng", []string{"get", "Canvas", "Png"}},
		{"HTTPServer", []string{"HTTP", "Server"}},
		{"getHTTPResponse", []string{"get", "HTTP", "Response"}},
		{"mp3Player", []string{"mp3", "Player"}},
		{"lowercase", []string{"lowercase"}},
		{"ALLCAPS", []string{"ALLCAPS"}},
		{"X", []string{"X"}},
	}
	for _, tt := range tests {
		if got := splitCamel(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitCamel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStem checks the Porter stemmer against examples from Porter's paper
// and its reference vocabulary.
func TestStem(t *testing.T) {
	tests := map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
		"sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit",
		"rational": "ration", "valenci": "valenc", "digitizer": "digit", "conformabli": "conform",
		"radicalli": "radic", "differentli": "differ", "vileli": "vile", "analogousli": "analog",
		"vietnamization": "vietnam", "predication": "predic", "operator": "oper", "feudalism": "feudal",
		"decisiveness": "decis", "hopefulness": "hope", "callousness": "callous", "formaliti": "formal",
		"sensitiviti": "sensit", "sensibiliti": "sensibl", "triplicate": "triplic", "formative": "form",
		"formalize": "formal", "electriciti": "electr", "electrical": "electr", "hopeful": "hope",
		"goodness": "good", "revival": "reviv", "allowance": "allow", "inference": "infer",
		"airliner": "airlin", "gyroscopic": "gyroscop", "adjustable": "adjust", "defensible": "defens",
		"irritant": "irrit", "replacement": "replac", "adjustment": "adjust", "dependent": "depend",
		"adoption": "adopt", "homologous": "homolog", "communism": "commun", "activate": "activ",
		"angulariti": "angular", "effective": "effect", "bowdlerize": "bowdler", "probate": "probat",
		"rate": "rate", "cease": "ceas", "controll": "control", "roll": "roll",
		"generalization": "gener", "oscillators": "oscil", "trending": "trend", "news": "new",
		// Left alone: too short, or not plain ASCII letters.
		"is": "is", "mp3": "mp3", "café": "café",
	}
	for in, want := range tests {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}
