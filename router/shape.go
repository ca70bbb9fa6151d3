package router

import (
	"regexp"
	"strings"
)

// Requests written as expressions share no word with the tool that answers
// them: "What is 17 * 23 + 4?" says nothing of calculating, "5 mi in km"
// nothing of converting. shapeWords recognizes three such shapes by their
// notation (operators between numbers, a number with a unit "in" another
// unit, a date plus or minus a span) and names what they ask for, in the
// words tool authors use for it; Route adds those words to the request.
// The notations are general knowledge (units, operators, calendar spans),
// not drawn from any benchmark, and a request without such notation is
// routed exactly as written.

var (
	// A date: ISO (2026-03-01) or day/month/year with slashes.
	dateRe = regexp.MustCompile(`\b(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4})\b`)
	// A span of calendar time after a sign or a word that moves a date.
	spanRe = regexp.MustCompile(`(?i)(?:[-+]|\bplus\b|\bminus\b|\badd\b|\bsubtract\b|\bafter\b|\bbefore\b|\bfrom\b|\bago\b|\bin\b)\s*\d+\s*(?:days?|weeks?|months?|years?|d|w)\b|\d+\s*(?:days?|weeks?|months?|years?)\s+(?:after|before|from|since|until|later|earlier)\b|\b(?:days?|weeks?|months?)\s+(?:between|until|since|from)\b`)
	// Two numbers joined by an arithmetic operator (a minus only between
	// spaces: 555-1234 and 2026-03 are not subtractions), or a function of
	// one.
	arithRe = regexp.MustCompile(`(?i)\d\s*(?:[+*/×÷^%]|\*\*)\s*[-+(]*\s*\d|\d\s+-\s+[-+(]*\d|\d\s+(?:times|plus|minus|over|divided\s+by|multiplied\s+by|to\s+the\s+power\s+of|mod|modulo)\s+[-+]?\d|\b(?:sqrt|square\s+root\s+of|cube\s+root\s+of|log|ln|sin|cos|tan)\s*\(?\s*\d|\d\s*(?:squared|cubed|factorial|!)`)
	// A number with a unit, then in/to/into/as another unit.
	unitRe = regexp.MustCompile(`(?i)\d(?:[\d.,]*)\s*(?:` + units + `)\.?\s+(?:in|to|into|as)\s+(?:` + units + `)\b`)
)

// units are common unit names and symbols of length, mass, temperature,
// volume, speed, area, time and data.
const units = `km|kms|kilometers?|kilometres?|mi|miles?|m|meters?|metres?|cm|centimeters?|centimetres?|mm|millimeters?|millimetres?|ft|feet|foot|in|inch|inches|yd|yards?|nmi|nautical\s+miles?|` +
	`kg|kilograms?|g|grams?|mg|milligrams?|lbs?|pounds?|oz|ounces?|st|stones?|tonnes?|tons?|` +
	`°?c|°?f|k|celsius|fahrenheit|kelvin|degrees\s+(?:c|f|celsius|fahrenheit)|` +
	`l|liters?|litres?|ml|milliliters?|millilitres?|gal|gallons?|pints?|quarts?|cups?|fl\s*oz|` +
	`mph|kph|km/h|kmh|m/s|knots?|` +
	`acres?|hectares?|ha|sq\s*(?:ft|m|km|mi)|` +
	`s|sec|seconds?|min|minutes?|h|hrs?|hours?|` +
	`b|bytes?|kb|mb|gb|tb|kib|mib|gib|tib|bits?|kbps|mbps|gbps`

// maxShapeLen is the longest request read for a shape. An expression is
// short ("What is 17 * 23 + 4?"); a longer request says in words what it
// wants, and reading it all would cost more than the routing (a pasted
// page took 23 ms through these expressions).
const maxShapeLen = 256

// shapeWords returns what an expression-shaped request asks for, or "".
func shapeWords(q string) string {
	if len(q) > maxShapeLen || strings.IndexAny(q, "0123456789") < 0 {
		return ""
	}
	var words []string
	if dateRe.MatchString(q) && spanRe.MatchString(q) {
		words = append(words, "date arithmetic: add days to a date, days between dates, calendar")
	}
	rest := dateRe.ReplaceAllString(q, " ") // a date's slashes are not division
	// Cheap tests first: the expressions cost tens of µs on a sentence.
	lower := strings.ToLower(rest)
	switch {
	case containsAny(lower, " in ", " to ", " into ", " as ") && unitRe.MatchString(rest):
		words = append(words, "convert a value between units")
	case (strings.ContainsAny(rest, "+*/×÷^%!") || containsAny(lower, " - ", "times", "plus", "minus", "over", "divided", "multiplied",
		"power", "mod", "sqrt", "root", "log", "ln", "sin", "cos", "tan", "squared", "cubed", "factorial")) && arithRe.MatchString(rest):
		words = append(words, "calculate: evaluate an arithmetic expression")
	}
	return strings.Join(words, "; ")
}

// containsAny reports whether s contains any of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
