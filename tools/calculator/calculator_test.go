package calculator

import (
	"context"
	"sort"
	"strings"
	"testing"

	"adaptbot/contract/contracttest"
)

func TestExecute(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{"2 + 3 * 4", "2 + 3 * 4 = 14"},
		{"  (2 + 3)   * 4 ", "(2 + 3) * 4 = 20"},
		{"10 - 4 - 3", "10 - 4 - 3 = 3"},
		{"100 / 10 / 5", "100 / 10 / 5 = 2"},
		{"7 / 2", "7 / 2 = 3.5"},
		{"2^3^2", "2^3^2 = 512"},
		{"(2^3)^2", "(2^3)^2 = 64"},
		{"2 ** 10", "2 ** 10 = 1024"},
		{"-2^2", "-2^2 = -4"},
		{"(-2)^2", "(-2)^2 = 4"},
		{"2^-1", "2^-1 = 0.5"},
		{"--3", "--3 = 3"},
		{"-(3 + 4) * +2", "-(3 + 4) * +2 = -14"},
		{"17 % 5", "17 % 5 = 2"},
		{"-7 % 3", "-7 % 3 = -1"},
		{"5.5 % 2", "5.5 % 2 = 1.5"},
		{"2 + 3 % 2 * 4", "2 + 3 % 2 * 4 = 6"},
		{".5 + 1.", ".5 + 1. = 1.5"},
		{"1.5e3 + 2E-1", "1.5e3 + 2E-1 = 1500.2"},
		{"0.1 + 0.2", "0.1 + 0.2 = 0.3"},
		{"1 / 3", "1 / 3 = 0.333333333333"},
		{"2 / 3", "2 / 3 = 0.666666666667"},
		{"10^21", "10^21 = 1e+21"},
		{"10^20", "10^20 = 100000000000000000000"},
		{"1 / 10^7", "1 / 10^7 = 1e-07"},
		{"-0", "-0 = 0"},
		{"sqrt(16)", "sqrt(16) = 4"},
		{"sqrt(2)", "sqrt(2) = 1.41421356237"},
		{"cbrt(-27)", "cbrt(-27) = -3"},
		{"abs(-4.5)", "abs(-4.5) = 4.5"},
		{"pi", "pi = 3.14159265359"},
		{"PI * 2", "PI * 2 = 6.28318530718"},
		{"π", "π = 3.14159265359"},
		{"e", "e = 2.71828182846"},
		{"ln(e)", "ln(e) = 1"},
		{"log(e^2)", "log(e^2) = 2"},
		{"log10(1000)", "log10(1000) = 3"},
		{"log2(1024)", "log2(1024) = 10"},
		{"exp(0)", "exp(0) = 1"},
		{"sin(pi)", "sin(pi) = 0"},
		{"sin(pi / 2)", "sin(pi / 2) = 1"},
		{"cos(pi)", "cos(pi) = -1"},
		{"cos(pi / 2)", "cos(pi / 2) = 0"},
		{"tan(pi / 4)", "tan(pi / 4) = 1"},
		{"atan(1) * 4", "atan(1) * 4 = 3.14159265359"},
		{"floor(-2.5)", "floor(-2.5) = -3"},
		{"ceil(2.1)", "ceil(2.1) = 3"},
		{"round(2.5)", "round(2.5) = 3"},
		{"round(-2.5)", "round(-2.5) = -3"},
		{"round(3.14159, 2)", "round(3.14159, 2) = 3.14"},
		{"round(1234, -2)", "round(1234, -2) = 1200"},
		{"min(3, -1, 2)", "min(3, -1, 2) = -1"},
		{"max(3, 7, -1) % 4", "max(3, 7, -1) % 4 = 3"},
		{"max(5)", "max(5) = 5"},
		{"max(1, min(4, 2)) * sqrt(abs(-9))", "max(1, min(4, 2)) * sqrt(abs(-9)) = 6"},
		{"Sqrt(9)", "Sqrt(9) = 3"},
		{"6 × 7 ÷ 2 − 1", "6 × 7 ÷ 2 − 1 = 20"},
		{"2\n+\t2", "2 + 2 = 4"},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Expression: tt.expr})
		if err != nil {
			t.Errorf("Execute(%q) error: %v", tt.expr, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Execute(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}

func TestExecuteErrors(t *testing.T) {
	tests := []struct {
		expr    string
		wantErr string
	}{
		{"", "the expression is empty"},
		{"   ", "the expression is empty"},
		{"2 + 3 )", "unexpected ')' at position 7"},
		{"(2 + 3))", "unexpected ')' at position 8"},
		{")", "unexpected ')' at position 1"},
		{"(1 + 2", "missing ')' to close '(' at position 1"},
		{"max(1, 2", "missing ')' to close '(' at position 4"},
		{"max(1 2)", "unexpected '2' at position 7"},
		{"2 +", "unexpected end of expression"},
		{"2 * * 3", "unexpected '*' at position 5"},
		{"()", "unexpected ')' at position 2"},
		{"2 3", "unexpected '3' at position 3"},
		{"1 / 0", "division by zero at position 3"},
		{"1 / (2 - 2)", "division by zero"},
		{"5 % 0", "modulo by zero at position 3"},
		{"0^-1", "division by zero"},
		{"foo(2)", `unknown function "foo" at position 1; known functions: abs,`},
		{"2 * x", `unknown name "x" at position 5; the constants are pi and e`},
		{"sqrt", "function sqrt at position 1 needs its arguments in parentheses"},
		{"sqrt(-4)", "the square root of -4 is not a real number"},
		{"log(0)", "the logarithm of 0 is undefined"},
		{"ln(-1)", "the logarithm of -1 is undefined"},
		{"asin(2)", "asin(2) is not a real number"},
		{"(-8)^(1/3)", "is not a real number"},
		{"10^400", "is too large to represent"},
		{"1e308 * 10", "the result is too large to represent"},
		{"exp(1000)", "exp(1000) is infinite"},
		{"1e999", "too large"},
		{"sqrt(1, 2)", "sqrt at position 1 takes 1 argument, got 2"},
		{"round(1, 2, 3)", "round at position 1 takes 1 to 2 arguments, got 3"},
		{"round(1, 0.5)", "whole number"},
		{"min()", "min at position 1 takes at least 1 argument(s), got 0"},
		{"2 $ 3", "unexpected character '$' at position 3"},
		{".", `malformed number "." at position 1`},
		{"1.2.3", "unexpected '.3' at position 4"},
		{strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), "nests deeper than"},
		{strings.Repeat("-", 300) + "1", "nests deeper than"},
		{strings.Repeat("2^", 300) + "1", "nests deeper than"},
		{strings.Repeat("1+", 1000) + "1", "the limit is 2000"},
	}
	for _, tt := range tests {
		got, err := Execute(context.Background(), Input{Expression: tt.expr})
		if err == nil {
			t.Errorf("Execute(%q) = %q, want error containing %q", tt.expr, got, tt.wantErr)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Execute(%q) error = %q, want it to contain %q", tt.expr, err, tt.wantErr)
		}
	}
}

func TestFunctionNamesListsEveryFunction(t *testing.T) {
	var names []string
	for name := range functions {
		names = append(names, name)
	}
	sort.Strings(names)
	if got, want := functionNames, strings.Join(names, ", "); got != want {
		t.Errorf("functionNames = %q, want %q", got, want)
	}
}

func TestContract(t *testing.T) {
	contracttest.Check(t, "calculator", contracttest.Want{
		Category:    "math",
		Description: "Evaluates an arithmetic expression",
		Properties:  map[string]string{"expression": "string"},
		Required:    []string{"expression"},
	})
}
