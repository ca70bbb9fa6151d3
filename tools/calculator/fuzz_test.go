package calculator

import (
	"context"
	"math"
	"strings"
	"testing"
)

// FuzzEvaluate feeds the expression parser anything a model or a person
// may type: a number or an error, never a panic, never NaN or infinity.
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"2 + 3 * 4", "(2 + 3) * sqrt(16) / 2^3", "max(3, 7) % 4", "-2^2", "2**-1",
		"round(pi, 3)", "min()", "log(-1)", "1e308 * 10", "((((1))))", "1.2.3", "sin(", ")",
		"cbrt(27) + abs(-1) + exp(0) + ln(e) + log10(100) + log2(8) + floor(1.5) + ceil(1.2)",
		"asin(2)", "tan(pi/2)", "1 / 0", "0 ^ -1", "5 % 0", strings.Repeat("(", 50) + "1" + strings.Repeat(")", 50),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("%q = %v without an error", expr, v)
		}
		out, err := Execute(context.Background(), Input{Expression: expr})
		if err == nil && !strings.Contains(out, " = ") {
			t.Fatalf("%q: %q does not say = result", expr, out)
		}
	})
}
