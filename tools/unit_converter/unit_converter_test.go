package unit_converter

import (
	"context"
	"strings"
	"testing"

	"adaptbot/contract/contracttest"
)

func TestExecute(t *testing.T) {
	tests := []struct {
		value    float64
		from, to string
		want     string
	}{
		// length
		{5, "km", "miles", "5 kilometers (km) = 3.106855961 miles (mi)"},
		{1, "mi", "kilometers", "1 mile (mi) = 1.609344 kilometers (km)"},
		{1, "foot", "cm", "1 foot (ft) = 30.48 centimeters (cm)"},
		{12, "inches", "ft", "12 inches (in) = 1 foot (ft)"},
		{100, "Meters", "YARDS", "100 meters (m) = 109.3613298 yards (yd)"},
		{1, "nautical mile", "m", "1 nautical mile (nmi) = 1852 meters (m)"},
		{1, "mm", "µm", "1 millimeter (mm) = 1000 micrometers (µm)"},
		{500, "nm", "um", "500 nanometers (nm) = 0.5 micrometers (µm)"},
		{-3, "m", "ft", "-3 meters (m) = -9.842519685 feet (ft)"},
		{0, "km", "m", "0 kilometers (km) = 0 meters (m)"},
		// mass
		{1, "kg", "lb", "1 kilogram (kg) = 2.204622622 pounds (lb)"},
		{16, "oz", "lbs", "16 ounces (oz) = 1 pound (lb)"},
		{14, "pounds", "stone", "14 pounds (lb) = 1 stone (st)"},
		{2, "ton", "kg", "2 short tons (US ton) = 1814.36948 kilograms (kg)"},
		{1, "long ton", "t", "1 long ton (UK ton) = 1.016046909 tonnes (t)"},
		{1, "metric ton", "kilos", "1 tonne (t) = 1000 kilograms (kg)"},
		{250, "mg", "g", "250 milligrams (mg) = 0.25 grams (g)"},
		{1, "mcg", "mg", "1 microgram (µg) = 0.001 milligrams (mg)"},
		// temperature
		{100, "°C", "fahrenheit", "100 degrees Celsius (°C) = 212 degrees Fahrenheit (°F)"},
		{212, "degrees F", "C", "212 degrees Fahrenheit (°F) = 100 degrees Celsius (°C)"},
		{-40, "F", "celsius", "-40 degrees Fahrenheit (°F) = -40 degrees Celsius (°C)"},
		{98.6, "°F", "°C", "98.6 degrees Fahrenheit (°F) = 37 degrees Celsius (°C)"},
		{0, "K", "celsius", "0 kelvins (K) = -273.15 degrees Celsius (°C)"},
		{0, "℃", "kelvin", "0 degrees Celsius (°C) = 273.15 kelvins (K)"},
		{32, "deg f", "degree celsius", "32 degrees Fahrenheit (°F) = 0 degrees Celsius (°C)"},
		{300, "kelvins", "ºF", "300 kelvins (K) = 80.33 degrees Fahrenheit (°F)"},
		{-1, "degC", "degC", "-1 degree Celsius (°C) = -1 degree Celsius (°C)"},
		// volume
		{1, "gallon", "liters", "1 US gallon (gal) = 3.785411784 liters (L)"},
		{1, "imperial gallon", "L", "1 imperial gallon (imp gal) = 4.54609 liters (L)"},
		{2, "cups", "ml", "2 US cups (cup) = 473.176473 milliliters (mL)"},
		{1, "fl. oz.", "mL", "1 US fluid ounce (fl oz) = 29.57352956 milliliters (mL)"},
		{3, "tsp", "tbsp", "3 teaspoons (tsp) = 1 tablespoon (tbsp)"},
		{1, "m³", "L", "1 cubic meter (m³) = 1000 liters (L)"},
		{1, "cubic feet", "m3", "1 cubic foot (ft³) = 0.02831684659 cubic meters (m³)"},
		{250, "cc", "dl", "250 cubic centimeters (cm³) = 2.5 deciliters (dL)"},
		{1, "pint", "uk pint", "1 US pint (pt) = 0.8326741846 imperial pints (imp pt)"},
		// speed
		{100, "km/h", "mph", "100 kilometers per hour (km/h) = 62.13711922 miles per hour (mph)"},
		{60, "miles per hour", "KM / H", "60 miles per hour (mph) = 96.56064 kilometers per hour (km/h)"},
		{10, "m/s", "kph", "10 meters per second (m/s) = 36 kilometers per hour (km/h)"},
		{1, "knot", "km/h", "1 knot (kn) = 1.852 kilometers per hour (km/h)"},
		{10, "inches per second", "m/s", "10 inches per second (in/s) = 0.254 meters per second (m/s)"},
		{1, "km/min", "km/h", "1 kilometer per minute (km/min) = 60 kilometers per hour (km/h)"},
		{88, "feet/sec", "mph", "88 feet per second (ft/s) = 60 miles per hour (mph)"},
		// data size: SI, IEC, bits
		{1, "GiB", "MB", "1 gibibyte (GiB) = 1073.741824 megabytes (MB)"},
		{1, "GB", "MiB", "1 gigabyte (GB) = 953.6743164 mebibytes (MiB)"},
		{1, "KiB", "bytes", "1 kibibyte (KiB) = 1024 bytes (B)"},
		{1, "kB", "B", "1 kilobyte (kB) = 1000 bytes (B)"},
		{1, "byte", "bits", "1 byte (B) = 8 bits (bit)"},
		{1, "B", "b", "1 byte (B) = 8 bits (bit)"},
		{100, "Mb", "MB", "100 megabits (Mbit) = 12.5 megabytes (MB)"},
		{100, "mb", "Mbit", "100 megabytes (MB) = 800 megabits (Mbit)"},
		{1, "Gb", "gigabytes", "1 gigabit (Gbit) = 0.125 gigabytes (GB)"},
		{1, "gb", "gigabits", "1 gigabyte (GB) = 8 gigabits (Gbit)"},
		{1, "kb", "bit", "1 kilobyte (kB) = 8000 bits (bit)"},
		{1, "Kb", "bit", "1 kilobit (kbit) = 1000 bits (bit)"},
		{1, "Kibit", "bits", "1 kibibit (Kibit) = 1024 bits (bit)"},
		{1, "TiB", "TB", "1 tebibyte (TiB) = 1.099511628 terabytes (TB)"},
		{2, "PB", "Pb", "2 petabytes (PB) = 16 petabits (Pbit)"},
		// formatting
		{1e-9, "m", "km", "1e-09 meters (m) = 1e-12 kilometers (km)"},
		{1e20, "km", "m", "100000000000000000000 kilometers (km) = 1e+23 meters (m)"},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Value: tt.value, From: tt.from, To: tt.to})
		if err != nil {
			t.Errorf("Execute(%v, %q, %q) error: %v", tt.value, tt.from, tt.to, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Execute(%v, %q, %q)\n got %q\nwant %q", tt.value, tt.from, tt.to, got, tt.want)
		}
	}
}

func TestExecuteErrors(t *testing.T) {
	tests := []struct {
		value    float64
		from, to string
		wantErr  []string
	}{
		{1, "kg", "m", []string{"cannot convert kilograms (mass) to meters (length)"}},
		{1, "°C", "mph", []string{"cannot convert degrees Celsius (temperature) to miles per hour (speed)"}},
		{1, "MB", "L", []string{"cannot convert megabytes (data size) to liters (volume)"}},
		{1, "furlong", "m", []string{`unknown unit "furlong"`, "length units are: meters (m), kilometers (km)", "nautical miles (nmi)"}},
		{1, "kg", "stonez", []string{`unknown unit "stonez"`, "mass units are:", "pounds (lb)"}},
		{1, "furlong", "parsec", []string{`unknown units "furlong" and "parsec"`, "- length: m, km", "- data size: B, kB"}},
		{1, "", "m", []string{`unknown unit ""`}},
		{1, "km/fortnight", "m/s", []string{`unknown unit "km/fortnight"`, "speed units are:"}},
		{1, "kg/h", "m/s", []string{`unknown unit "kg/h"`}},
		{-500, "C", "K", []string{"-500 °C is below absolute zero"}},
		{-1, "K", "F", []string{"-1 K is below absolute zero"}},
		{1e308, "PB", "bit", []string{"too large to convert"}},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Value: tt.value, From: tt.from, To: tt.to})
		if err == nil {
			t.Errorf("Execute(%v, %q, %q) = %q, want an error", tt.value, tt.from, tt.to, got)
			continue
		}
		for _, want := range tt.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Execute(%v, %q, %q) error = %q, want it to contain %q", tt.value, tt.from, tt.to, err, want)
			}
		}
	}
}

// TestNamesAreUnambiguous guards the table: a name, symbol or alias that two
// units share would silently convert with whichever came last.
func TestNamesAreUnambiguous(t *testing.T) {
	owner := map[string]string{}
	for _, u := range units {
		for _, n := range append([]string{u.singular, u.plural, u.symbol}, u.aliases...) {
			key := normalize(n)
			if prev, ok := owner[key]; ok && prev != u.plural {
				t.Errorf("%q (normalized %q) names both %s and %s", n, key, prev, u.plural)
			}
			owner[key] = u.plural
		}
		if u.factor <= 0 {
			t.Errorf("%s has factor %v", u.plural, u.factor)
		}
	}
	for sym, target := range exactSymbols {
		if _, ok := bySymbol[target]; !ok {
			t.Errorf("exactSymbols[%q] = %q, which is no unit's symbol", sym, target)
		}
	}
}

func TestContract(t *testing.T) {
	contracttest.Check(t, "unit_converter", contracttest.Want{
		Category:    "conversion",
		Description: "Converts a value between units",
		Properties:  map[string]string{"value": "number", "from": "string", "to": "string"},
		Required:    []string{"value", "from", "to"},
	})
}
