// Package trip_time tells how long a trip takes: a distance in miles at an
// average speed in km/h. It builds on two other tools: unit_converter turns
// the miles into kilometres, and calculator divides them by the speed.
package trip_time

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"adaptbot/toolkit"
)

// Category is the tool's domain.
const Category = "travel"

// Input is the trip: how far, how fast.
type Input struct {
	Miles    float64 `json:"miles" jsonschema:"the distance in miles, e.g. 120"`
	SpeedKmh float64 `json:"speed_kmh" jsonschema:"the average speed in kilometres per hour, e.g. 90"`
}

// Execute converts in.Miles to kilometres with unit_converter, divides them
// by in.SpeedKmh with calculator, and says how long the trip takes.
func Execute(ctx context.Context, in Input) (string, error) {
	if in.Miles <= 0 {
		return "", errors.New("miles must be above 0")
	}
	if in.SpeedKmh <= 0 {
		return "", errors.New("speed_kmh must be above 0")
	}
	converted, err := toolkit.Call(ctx, "unit_converter", map[string]any{"value": in.Miles, "from": "miles", "to": "km"})
	if err != nil {
		return "", fmt.Errorf("converting %v miles to km: %w", in.Miles, err)
	}
	km, err := result(converted)
	if err != nil {
		return "", fmt.Errorf("unit_converter said %q: %w", converted, err)
	}
	divided, err := toolkit.Call(ctx, "calculator", map[string]any{"expression": fmt.Sprintf("%s / %v", km, in.SpeedKmh)})
	if err != nil {
		return "", fmt.Errorf("dividing by the speed: %w", err)
	}
	hours, err := result(divided)
	if err != nil {
		return "", fmt.Errorf("calculator said %q: %w", divided, err)
	}
	h, err := strconv.ParseFloat(hours, 64)
	if err != nil {
		return "", fmt.Errorf("calculator said %q: %w", divided, err)
	}
	whole := math.Floor(h)
	minutes := math.Round((h - whole) * 60)
	if minutes == 60 {
		whole, minutes = whole+1, 0
	}
	return fmt.Sprintf("%v miles (%s km) at %v km/h takes %s hours (%v h %v min)", in.Miles, km, in.SpeedKmh, hours, whole, minutes), nil
}

// result is the number after " = " in "<question> = <number> <unit>".
func result(text string) (string, error) {
	i := strings.LastIndex(text, " = ")
	if i < 0 {
		return "", errors.New("no result after \" = \"")
	}
	fields := strings.Fields(text[i+3:])
	if len(fields) == 0 {
		return "", errors.New("nothing after \" = \"")
	}
	return fields[0], nil
}
