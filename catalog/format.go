package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"adaptbot/clip"
)

// Formats of WriteResults and WriteTools.
const (
	FormatText  = "text"
	FormatJSON  = "json"
	FormatTable = "table"
)

// ParseFormat reads an output format.
func ParseFormat(s string) (string, error) {
	switch f := strings.ToLower(strings.TrimSpace(s)); f {
	case "":
		return FormatText, nil
	case FormatText, FormatJSON, FormatTable:
		return f, nil
	}
	return "", fmt.Errorf("unknown format %q: use text, json or table", s)
}

// WriteResults writes search results: text (one tool per entry, its
// description below), table, or a JSON array.
func WriteResults(w io.Writer, format string, rs []Result) error {
	switch format {
	case FormatJSON:
		if rs == nil {
			rs = []Result{}
		}
		return writeJSON(w, rs)
	case FormatTable:
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tTOOL\tSCORE\tMATCHED\tDESCRIPTION")
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Server, r.Name, strconv.FormatFloat(r.Score, 'f', 2, 64), joinFields(r.Matched), clip.Runes(oneLine(r.Description), 80))
		}
		return tw.Flush()
	}
	for _, r := range rs {
		fmt.Fprintf(w, "%s%s  (score %.2f)\n", r.ID(), label(r.Tool), r.Score)
		if d := clip.Runes(oneLine(describe(r.Tool)), 200); d != "" {
			fmt.Fprintf(w, "    %s\n", d)
		}
	}
	if len(rs) == 0 {
		fmt.Fprintln(w, "no tools match")
	}
	return nil
}

// WriteTools writes a tool listing: text, table, or a JSON array.
func WriteTools(w io.Writer, format string, ts []Tool) error {
	switch format {
	case FormatJSON:
		if ts == nil {
			ts = []Tool{}
		}
		return writeJSON(w, ts)
	case FormatTable:
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tNAME\tCATEGORY\tVERSION\tORIGIN\tSTATUS\tDESCRIPTION")
		for _, t := range ts {
			category, v, origin := t.own()
			version := "-"
			if v > 0 {
				version = strconv.Itoa(v)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Server, t.Name, dash(category), version, dash(string(origin)), dash(t.Status), clip.Runes(oneLine(describe(t)), 80))
		}
		return tw.Flush()
	}
	for _, t := range ts {
		fmt.Fprintf(w, "%s%s\n", t.ID(), label(t))
		if d := clip.Runes(oneLine(describe(t)), 200); d != "" {
			fmt.Fprintf(w, "    %s\n", d)
		}
	}
	if len(ts) == 0 {
		fmt.Fprintln(w, "no tools")
	}
	return nil
}

// label says where a tool comes from, in brackets after its name.
func label(t Tool) string {
	if t.Server != Local {
		return ""
	}
	parts := []string{Local}
	if t.Category != "" {
		parts = append(parts, t.Category)
	}
	if t.Status != "" && t.Status != "ok" {
		parts = append(parts, t.Status)
	}
	return " [" + strings.Join(parts, ", ") + "]"
}

func describe(t Tool) string {
	if t.Title != "" && t.Description != "" && !strings.Contains(t.Description, t.Title) {
		return t.Title + ": " + t.Description
	}
	if t.Description == "" {
		return t.Title
	}
	return t.Description
}

func joinFields(fs []Field) string {
	if len(fs) == 0 {
		return "-"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = string(f)
	}
	return strings.Join(parts, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
