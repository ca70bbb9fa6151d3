// Package unit_converter converts a value between units of the same quantity:
// length (m, km, cm, mm, µm, nm, mi, yd, ft, in, nautical miles), mass (kg, g,
// mg, µg, tonnes, lb, oz, stone, US short and UK long tons), temperature
// (Celsius, Fahrenheit, Kelvin), volume (L, mL, cL, dL, m³, cm³, US and
// imperial gallons and pints, quarts, cups, fl oz, tbsp, tsp, ft³, in³), speed
// (m/s, km/h, mph, knots, ft/s, and any length per s, min or h such as
// "miles per hour") and data size. Data sizes come in bytes and in
// bits (1 byte = 8 bits): kB, MB, GB, TB, PB are SI powers of 1000 bytes and
// KiB, MiB, GiB, TiB, PiB are IEC powers of 1024 bytes; bits are written
// bit, kbit, Mbit, Gbit, Tbit, Pbit, Kibit, Mibit, Gibit or Kb, Mb, Gb, Tb, Pb (capital
// prefix, small b), while an all-lower-case mb or gb is read as bytes. Unit
// names are case-insensitive and accept full names, plurals and common
// abbreviations such as "km", "kilometers", "mi", "miles", "°F", "fahrenheit".
package unit_converter

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Category is the tool's domain.
const Category = "conversion"

// Input is the value to convert and the two units.
type Input struct {
	Value float64 `json:"value" jsonschema:"the number to convert"`
	From  string  `json:"from" jsonschema:"the unit of value, e.g. km, miles, °F, kg, MiB"`
	To    string  `json:"to" jsonschema:"the unit to convert to, of the same quantity as from"`
}

// Execute converts in.Value from in.From to in.To and returns a sentence such
// as "5 kilometers (km) = 3.106855961 miles (mi)".
func Execute(ctx context.Context, in Input) (string, error) {
	from, fromOK := lookup(in.From)
	to, toOK := lookup(in.To)
	switch {
	case !fromOK && !toOK:
		return "", fmt.Errorf("unknown units %q and %q; supported:\n%s", in.From, in.To, allUnits())
	case !fromOK:
		return "", fmt.Errorf("unknown unit %q; %s", in.From, unitsOf(to.quantity))
	case !toOK:
		return "", fmt.Errorf("unknown unit %q; %s", in.To, unitsOf(from.quantity))
	case from.quantity != to.quantity:
		return "", fmt.Errorf("cannot convert %s (%s) to %s (%s)", from.plural, from.quantity, to.plural, to.quantity)
	}
	base := in.Value*from.factor + from.offset
	if from.quantity == temperature && base < -1e-9 {
		return "", fmt.Errorf("%s %s is below absolute zero", formatNumber(in.Value), from.symbol)
	}
	result := (base - to.offset) / to.factor
	// When offsets cancel (32 °F to °C) what is left is rounding noise.
	if math.Abs(result) < 1e-9*math.Abs(base/to.factor) {
		result = 0
	}
	if math.IsInf(result, 0) || math.IsNaN(result) {
		return "", fmt.Errorf("%s %s is too large to convert", formatNumber(in.Value), from.symbol)
	}
	return describe(in.Value, from) + " = " + describe(result, to), nil
}

// describe writes "3 kilometers (km)".
func describe(v float64, u unit) string {
	n := formatNumber(v)
	name := u.plural
	if n == "1" || n == "-1" {
		name = u.singular
	}
	return n + " " + name + " (" + u.symbol + ")"
}

// formatNumber writes v with at most 10 significant digits and no trailing
// zeros, which hides the rounding noise of the conversion factors.
func formatNumber(v float64) string {
	if v == 0 {
		return "0"
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	if err != nil {
		r = v
	}
	if a := math.Abs(r); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// The quantities, each with its base unit noted.
const (
	length      = "length"      // meters
	mass        = "mass"        // kilograms
	temperature = "temperature" // kelvins
	volume      = "volume"      // liters
	speed       = "speed"       // meters per second
	dataSize    = "data size"   // bytes
)

var quantities = []string{length, mass, temperature, volume, speed, dataSize}

// unit is one unit: base = value*factor + offset, in the base unit of its
// quantity. Only temperatures have an offset.
type unit struct {
	singular, plural, symbol string
	quantity                 string
	factor, offset           float64
	// aliases are further names, matched case-insensitively; the singular,
	// plural and symbol always match.
	aliases []string
}

var units = []unit{
	{"meter", "meters", "m", length, 1, 0, []string{"metre", "metres", "mtr"}},
	{"kilometer", "kilometers", "km", length, 1000, 0, []string{"kilometre", "kilometres", "kms"}},
	{"centimeter", "centimeters", "cm", length, 0.01, 0, []string{"centimetre", "centimetres"}},
	{"millimeter", "millimeters", "mm", length, 0.001, 0, []string{"millimetre", "millimetres"}},
	{"micrometer", "micrometers", "µm", length, 1e-6, 0, []string{"μm", "um", "micrometre", "micrometres", "micron", "microns"}},
	{"nanometer", "nanometers", "nm", length, 1e-9, 0, []string{"nanometre", "nanometres"}},
	{"mile", "miles", "mi", length, 1609.344, 0, []string{"statute mile", "statute miles"}},
	{"yard", "yards", "yd", length, 0.9144, 0, []string{"yds"}},
	{"foot", "feet", "ft", length, 0.3048, 0, nil},
	{"inch", "inches", "in", length, 0.0254, 0, nil},
	{"nautical mile", "nautical miles", "nmi", length, 1852, 0, nil},

	{"kilogram", "kilograms", "kg", mass, 1, 0, []string{"kilo", "kilos", "kgs", "kilogramme", "kilogrammes"}},
	{"gram", "grams", "g", mass, 0.001, 0, []string{"gramme", "grammes", "gm"}},
	{"milligram", "milligrams", "mg", mass, 1e-6, 0, []string{"milligramme", "milligrammes"}},
	{"microgram", "micrograms", "µg", mass, 1e-9, 0, []string{"μg", "ug", "mcg"}},
	{"tonne", "tonnes", "t", mass, 1000, 0, []string{"metric ton", "metric tons", "metric tonne", "metric tonnes"}},
	{"pound", "pounds", "lb", mass, 0.45359237, 0, []string{"lbs", "lbm"}},
	{"ounce", "ounces", "oz", mass, 0.028349523125, 0, []string{"ozs"}},
	{"stone", "stone", "st", mass, 6.35029318, 0, []string{"stones"}},
	{"short ton", "short tons", "US ton", mass, 907.18474, 0, []string{"ton", "tons", "us tons"}},
	{"long ton", "long tons", "UK ton", mass, 1016.0469088, 0, []string{"uk tons", "imperial ton", "imperial tons"}},

	{"degree Celsius", "degrees Celsius", "°C", temperature, 1, 273.15, []string{"c", "celsius", "centigrade", "degc"}},
	{"degree Fahrenheit", "degrees Fahrenheit", "°F", temperature, 5.0 / 9, 273.15 - 32*5.0/9, []string{"f", "fahrenheit", "degf"}},
	{"kelvin", "kelvins", "K", temperature, 1, 0, []string{"degk"}},

	{"liter", "liters", "L", volume, 1, 0, []string{"litre", "litres", "ltr", "lt"}},
	{"milliliter", "milliliters", "mL", volume, 0.001, 0, []string{"millilitre", "millilitres"}},
	{"centiliter", "centiliters", "cL", volume, 0.01, 0, []string{"centilitre", "centilitres"}},
	{"deciliter", "deciliters", "dL", volume, 0.1, 0, []string{"decilitre", "decilitres"}},
	{"cubic meter", "cubic meters", "m³", volume, 1000, 0, []string{"m3", "m^3", "cubic metre", "cubic metres"}},
	{"cubic centimeter", "cubic centimeters", "cm³", volume, 0.001, 0, []string{"cm3", "cm^3", "cc", "ccm", "cubic centimetre", "cubic centimetres"}},
	{"US gallon", "US gallons", "gal", volume, 3.785411784, 0, []string{"gallon", "gallons", "gals", "us gal"}},
	{"imperial gallon", "imperial gallons", "imp gal", volume, 4.54609, 0, []string{"uk gallon", "uk gallons", "uk gal"}},
	{"US quart", "US quarts", "qt", volume, 0.946352946, 0, []string{"quart", "quarts", "qts"}},
	{"US pint", "US pints", "pt", volume, 0.473176473, 0, []string{"pint", "pints", "pts"}},
	{"imperial pint", "imperial pints", "imp pt", volume, 0.56826125, 0, []string{"uk pint", "uk pints"}},
	{"US cup", "US cups", "cup", volume, 0.2365882365, 0, []string{"cups"}},
	{"US fluid ounce", "US fluid ounces", "fl oz", volume, 0.0295735295625, 0, []string{"floz", "fluid ounce", "fluid ounces"}},
	{"tablespoon", "tablespoons", "tbsp", volume, 0.01478676478125, 0, []string{"tbs", "tbsps"}},
	{"teaspoon", "teaspoons", "tsp", volume, 0.00492892159375, 0, []string{"tsps"}},
	{"cubic foot", "cubic feet", "ft³", volume, 28.316846592, 0, []string{"ft3", "ft^3", "cu ft"}},
	{"cubic inch", "cubic inches", "in³", volume, 0.016387064, 0, []string{"in3", "in^3", "cu in"}},

	{"meter per second", "meters per second", "m/s", speed, 1, 0, []string{"metre per second", "metres per second", "m/sec"}},
	{"kilometer per hour", "kilometers per hour", "km/h", speed, 1 / 3.6, 0, []string{"kmh", "kph", "kmph", "km/hr", "kilometre per hour", "kilometres per hour"}},
	{"mile per hour", "miles per hour", "mph", speed, 0.44704, 0, []string{"mi/h", "mi/hr"}},
	{"knot", "knots", "kn", speed, 1852.0 / 3600, 0, []string{"kt", "kts", "nautical miles per hour"}},
	{"foot per second", "feet per second", "ft/s", speed, 0.3048, 0, []string{"fps", "ft/sec"}},

	{"byte", "bytes", "B", dataSize, 1, 0, nil},
	{"kilobyte", "kilobytes", "kB", dataSize, 1e3, 0, nil},
	{"megabyte", "megabytes", "MB", dataSize, 1e6, 0, nil},
	{"gigabyte", "gigabytes", "GB", dataSize, 1e9, 0, nil},
	{"terabyte", "terabytes", "TB", dataSize, 1e12, 0, nil},
	{"petabyte", "petabytes", "PB", dataSize, 1e15, 0, nil},
	{"kibibyte", "kibibytes", "KiB", dataSize, 1 << 10, 0, nil},
	{"mebibyte", "mebibytes", "MiB", dataSize, 1 << 20, 0, nil},
	{"gibibyte", "gibibytes", "GiB", dataSize, 1 << 30, 0, nil},
	{"tebibyte", "tebibytes", "TiB", dataSize, 1 << 40, 0, nil},
	{"pebibyte", "pebibytes", "PiB", dataSize, 1 << 50, 0, nil},
	{"bit", "bits", "bit", dataSize, 0.125, 0, nil},
	{"kilobit", "kilobits", "kbit", dataSize, 125, 0, nil},
	{"megabit", "megabits", "Mbit", dataSize, 125e3, 0, nil},
	{"gigabit", "gigabits", "Gbit", dataSize, 125e6, 0, nil},
	{"terabit", "terabits", "Tbit", dataSize, 125e9, 0, nil},
	{"petabit", "petabits", "Pbit", dataSize, 125e12, 0, nil},
	{"kibibit", "kibibits", "Kibit", dataSize, 1 << 7, 0, nil},
	{"mebibit", "mebibits", "Mibit", dataSize, 1 << 17, 0, nil},
	{"gibibit", "gibibits", "Gibit", dataSize, 1 << 27, 0, nil},
}

// exactSymbols are matched case-sensitively before anything else: in data
// sizes a small b means bits and a capital B bytes.
var exactSymbols = map[string]string{
	"b": "bit", "Kb": "kbit", "kb": "kB", "Mb": "Mbit", "Gb": "Gbit", "Tb": "Tbit", "Pb": "Pbit",
	"B": "B",
}

// byName maps each normalized name, plural, symbol and alias to its index in
// units; bySymbol maps each symbol as written. (Two single-value variables:
// Yaegi cannot initialize "var a, b = f()" when f is declared after it.)
var (
	byName   = indexNames()
	bySymbol = indexSymbols()
)

func indexNames() map[string]int {
	names := map[string]int{}
	for i, u := range units {
		for _, n := range append([]string{u.singular, u.plural, u.symbol}, u.aliases...) {
			names[normalize(n)] = i
		}
	}
	return names
}

func indexSymbols() map[string]int {
	symbols := map[string]int{}
	for i, u := range units {
		symbols[u.symbol] = i
	}
	return symbols
}

// lookup finds the unit called s.
func lookup(s string) (unit, bool) {
	s = strings.TrimSpace(s)
	if sym, ok := exactSymbols[s]; ok {
		return units[bySymbol[sym]], true
	}
	key := normalize(s)
	if i, ok := byName[key]; ok {
		return units[i], true
	}
	// "degrees celsius", "deg F", "° C": the degree words are decoration.
	for _, prefix := range []string{"degrees ", "degree ", "deg "} {
		if rest := strings.TrimPrefix(key, prefix); rest != key {
			if i, ok := byName[rest]; ok && units[i].quantity == temperature {
				return units[i], true
			}
		}
	}
	// A plural not listed, such as "tablespoonss" typed twice over.
	if len(key) > 3 && strings.HasSuffix(key, "s") {
		if i, ok := byName[strings.TrimSuffix(key, "s")]; ok {
			return units[i], true
		}
	}
	return compositeSpeed(key)
}

// perTime holds the times a speed may be given per; factors are seconds.
var perTime = map[string]unit{
	"s":      {singular: "second", symbol: "s", factor: 1},
	"sec":    {singular: "second", symbol: "s", factor: 1},
	"second": {singular: "second", symbol: "s", factor: 1},
	"min":    {singular: "minute", symbol: "min", factor: 60},
	"minute": {singular: "minute", symbol: "min", factor: 60},
	"h":      {singular: "hour", symbol: "h", factor: 3600},
	"hr":     {singular: "hour", symbol: "h", factor: 3600},
	"hour":   {singular: "hour", symbol: "h", factor: 3600},
}

// compositeSpeed reads a speed not in the table as a length per a time, such
// as "inches per second" or "km/min".
func compositeSpeed(key string) (unit, bool) {
	num, den, ok := strings.Cut(key, "/")
	if !ok {
		return unit{}, false
	}
	t, ok := perTime[den]
	if !ok {
		return unit{}, false
	}
	i, ok := byName[num]
	if !ok && len(num) > 3 && strings.HasSuffix(num, "s") {
		i, ok = byName[strings.TrimSuffix(num, "s")]
	}
	if !ok || units[i].quantity != length {
		return unit{}, false
	}
	l := units[i]
	return unit{
		singular: l.singular + " per " + t.singular,
		plural:   l.plural + " per " + t.singular,
		symbol:   l.symbol + "/" + t.symbol,
		quantity: speed,
		factor:   l.factor / t.factor,
	}, true
}

// normalize lower-cases s, drops dots and degree signs, writes "per" as "/"
// and collapses white space, so that "Km / H", "kilometers per hour" and
// "fl. oz." meet their table entries.
func normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.NewReplacer(
		"℃", "c", "℉", "f", "°", "", "º", "", ".", "", "²", "2", "³", "3",
	).Replace(s)
	words := strings.Fields(s)
	for i, w := range words {
		if w == "per" {
			words[i] = "/"
		}
	}
	s = strings.Join(words, " ")
	s = strings.ReplaceAll(s, " / ", "/")
	s = strings.ReplaceAll(s, " /", "/")
	return strings.ReplaceAll(s, "/ ", "/")
}

// unitsOf lists the units of quantity q.
func unitsOf(q string) string {
	var list []string
	for _, u := range units {
		if u.quantity == q {
			list = append(list, u.plural+" ("+u.symbol+")")
		}
	}
	return q + " units are: " + strings.Join(list, ", ")
}

func allUnits() string {
	var lines []string
	for _, q := range quantities {
		var symbols []string
		for _, u := range units {
			if u.quantity == q {
				symbols = append(symbols, u.symbol)
			}
		}
		lines = append(lines, "- "+q+": "+strings.Join(symbols, ", "))
	}
	return strings.Join(lines, "\n")
}
