// Package weather_forecast reports the current weather and a daily forecast
// (1 to 7 days, 3 by default) for a city, from the free Open-Meteo service:
// conditions in words, temperature and how it feels, humidity, wind, and each
// day's high, low and chance of precipitation. It finds the city with
// Open-Meteo's geocoding (the best match for the name; add a country or region
// after a comma, as in "Paris, Texas", to pick another) and reports in Celsius
// and km/h, or Fahrenheit and mph on request. Times and dates are the city's
// local ones.
package weather_forecast

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"adaptbot/toolkit"
)

// Category is the tool's domain.
const Category = "weather"

// Timeout covers both requests: the geocoding and the forecast.
const Timeout = 20 * time.Second

// Input names the place and what to report.
type Input struct {
	City  string `json:"city" jsonschema:"the city or place, e.g. Berlin, or Paris, Texas (a country or region after a comma narrows the search)"`
	Days  int    `json:"days,omitempty" jsonschema:"number of forecast days, today included, from 1 to 7; default 3"`
	Units string `json:"units,omitempty" jsonschema:"celsius (the default; wind in km/h) or fahrenheit (wind in mph)"`
}

// Output is the weather at the place.
type Output struct {
	Location  string  `json:"location"` // e.g. "Berlin, Land Berlin, Germany"
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	Timezone  string  `json:"timezone"`
	Units     Units   `json:"units"`
	Current   Current `json:"current"`
	Forecast  []Day   `json:"forecast"`
}

// Units names the units of the numbers in Current and Forecast.
type Units struct {
	Temperature string `json:"temperature"` // °C or °F
	WindSpeed   string `json:"wind_speed"`  // km/h or mph
	Humidity    string `json:"humidity"`
	Probability string `json:"precipitation_probability"`
}

// Current is the weather now. Numbers the service did not report are null.
type Current struct {
	Time        string   `json:"time"` // local, e.g. 2025-01-15T14:00
	Conditions  string   `json:"conditions"`
	Temperature *float64 `json:"temperature"`
	FeelsLike   *float64 `json:"feels_like"`
	Humidity    *float64 `json:"humidity"`
	WindSpeed   *float64 `json:"wind_speed"`
	Summary     string   `json:"summary"` // the above as a sentence, with units
}

// Day is one day of the forecast. Numbers the service did not report are null.
type Day struct {
	Date                     string   `json:"date"`
	Weekday                  string   `json:"weekday"`
	Conditions               string   `json:"conditions"`
	High                     *float64 `json:"high"`
	Low                      *float64 `json:"low"`
	PrecipitationProbability *float64 `json:"precipitation_probability"`
}

// The Open-Meteo endpoints.
const (
	geocodingURL = "https://geocoding-api.open-meteo.com/v1/search"
	forecastURL  = "https://api.open-meteo.com/v1/forecast"
)

const (
	defaultDays = 3
	maxDays     = 7
)

// Execute looks up in.City and fetches its weather.
func Execute(ctx context.Context, in Input) (Output, error) {
	city := strings.Join(strings.Fields(in.City), " ")
	if city == "" {
		return Output{}, errors.New("city is empty: name the city or place, e.g. Berlin")
	}
	if len([]rune(city)) > 100 {
		return Output{}, errors.New("city is longer than 100 characters")
	}
	days := in.Days
	if days == 0 {
		days = defaultDays
	}
	if days < 1 || days > maxDays {
		return Output{}, fmt.Errorf("days must be from 1 to %d, got %d", maxDays, in.Days)
	}
	fahrenheit, err := parseUnits(in.Units)
	if err != nil {
		return Output{}, err
	}

	p, err := geocode(ctx, city)
	if err != nil {
		return Output{}, err
	}
	var f forecastResponse
	if err := toolkit.GetJSON(ctx, forecastQuery(p, days, fahrenheit), &f); err != nil {
		return Output{}, fmt.Errorf("weather service, forecast for %s: %w", p.label(), err)
	}
	return report(p, f, fahrenheit), nil
}

// parseUnits reports whether units asks for Fahrenheit.
func parseUnits(units string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(units)) {
	case "", "celsius", "c", "°c", "metric":
		return false, nil
	case "fahrenheit", "f", "°f", "imperial":
		return true, nil
	}
	return false, fmt.Errorf("units must be celsius or fahrenheit, got %q", units)
}

// place is a geocoding result.
type place struct {
	Name        string  `json:"name"`
	Latitude    float64 `json:"latitude"`
	Longitude   float64 `json:"longitude"`
	Country     string  `json:"country"`
	CountryCode string  `json:"country_code"`
	Admin1      string  `json:"admin1"`
	Timezone    string  `json:"timezone"`
}

type geocodingResponse struct {
	Results []place `json:"results"`
}

// label names the place with its region and country, e.g. "Paris, Texas,
// United States".
func (p place) label() string {
	parts := []string{p.Name}
	if p.Admin1 != "" && p.Admin1 != p.Name {
		parts = append(parts, p.Admin1)
	}
	if p.Country != "" {
		parts = append(parts, p.Country)
	} else if p.CountryCode != "" {
		parts = append(parts, p.CountryCode)
	}
	return strings.Join(parts, ", ")
}

func geocode(ctx context.Context, city string) (place, error) {
	q := geocodingURL + "?name=" + toolkit.QueryEscape(city) + "&count=1&language=en&format=json"
	var g geocodingResponse
	if err := toolkit.GetJSON(ctx, q, &g); err != nil {
		return place{}, fmt.Errorf("weather service, looking up %q: %w", city, err)
	}
	if len(g.Results) == 0 {
		return place{}, fmt.Errorf("no place called %q was found: check the spelling, or name a nearby larger city", city)
	}
	return g.Results[0], nil
}

// The variables asked of the forecast.
const (
	currentVars = "temperature_2m,relative_humidity_2m,apparent_temperature,weather_code,wind_speed_10m"
	dailyVars   = "weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max"
)

func forecastQuery(p place, days int, fahrenheit bool) string {
	q := forecastURL +
		"?latitude=" + strconv.FormatFloat(p.Latitude, 'f', -1, 64) +
		"&longitude=" + strconv.FormatFloat(p.Longitude, 'f', -1, 64) +
		"&current=" + currentVars +
		"&daily=" + dailyVars +
		"&timezone=auto&forecast_days=" + strconv.Itoa(days)
	if fahrenheit {
		q += "&temperature_unit=fahrenheit&wind_speed_unit=mph"
	}
	return q
}

type forecastResponse struct {
	Timezone     string            `json:"timezone"`
	CurrentUnits map[string]string `json:"current_units"`
	Current      currentData       `json:"current"`
	Daily        dailyData         `json:"daily"`
}

type currentData struct {
	Time                string   `json:"time"`
	Temperature         *float64 `json:"temperature_2m"`
	RelativeHumidity    *float64 `json:"relative_humidity_2m"`
	ApparentTemperature *float64 `json:"apparent_temperature"`
	WeatherCode         *int     `json:"weather_code"`
	WindSpeed           *float64 `json:"wind_speed_10m"`
}

type dailyData struct {
	Time                     []string   `json:"time"`
	WeatherCode              []*int     `json:"weather_code"`
	TemperatureMax           []*float64 `json:"temperature_2m_max"`
	TemperatureMin           []*float64 `json:"temperature_2m_min"`
	PrecipitationProbability []*float64 `json:"precipitation_probability_max"`
}

// report turns the service's answer into the tool's.
func report(p place, f forecastResponse, fahrenheit bool) Output {
	units := Units{Temperature: "°C", WindSpeed: "km/h", Humidity: "%", Probability: "%"}
	if fahrenheit {
		units.Temperature, units.WindSpeed = "°F", "mph"
	}
	if u := f.CurrentUnits["temperature_2m"]; u != "" {
		units.Temperature = u
	}
	if u := f.CurrentUnits["wind_speed_10m"]; u != "" {
		units.WindSpeed = u
	}
	tz := f.Timezone
	if tz == "" {
		tz = p.Timezone
	}
	out := Output{
		Location:  p.label(),
		Latitude:  p.Latitude,
		Longitude: p.Longitude,
		Timezone:  tz,
		Units:     units,
		Current: Current{
			Time:        f.Current.Time,
			Conditions:  conditions(f.Current.WeatherCode),
			Temperature: f.Current.Temperature,
			FeelsLike:   f.Current.ApparentTemperature,
			Humidity:    f.Current.RelativeHumidity,
			WindSpeed:   f.Current.WindSpeed,
		},
		Forecast: []Day{},
	}
	out.Current.Summary = summary(out.Current, units)
	d := f.Daily
	for i, date := range d.Time {
		day := Day{
			Date:                     date,
			Weekday:                  weekday(date),
			Conditions:               conditions(intAt(d.WeatherCode, i)),
			High:                     floatAt(d.TemperatureMax, i),
			Low:                      floatAt(d.TemperatureMin, i),
			PrecipitationProbability: floatAt(d.PrecipitationProbability, i),
		}
		out.Forecast = append(out.Forecast, day)
	}
	return out
}

// summary writes the current weather as a sentence, such as "Overcast,
// 3.4 °C (feels like -0.8 °C), humidity 81%, wind 14.2 km/h."
func summary(c Current, u Units) string {
	parts := []string{c.Conditions}
	if c.Temperature != nil {
		s := number(*c.Temperature) + " " + u.Temperature
		if c.FeelsLike != nil {
			s += " (feels like " + number(*c.FeelsLike) + " " + u.Temperature + ")"
		}
		parts = append(parts, s)
	}
	if c.Humidity != nil {
		parts = append(parts, "humidity "+number(*c.Humidity)+u.Humidity)
	}
	if c.WindSpeed != nil {
		parts = append(parts, "wind "+number(*c.WindSpeed)+" "+u.WindSpeed)
	}
	return strings.Join(parts, ", ") + "."
}

func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// floatAt and intAt read a daily array that may be shorter than the dates.
func floatAt(xs []*float64, i int) *float64 {
	if i < len(xs) {
		return xs[i]
	}
	return nil
}

func intAt(xs []*int, i int) *int {
	if i < len(xs) {
		return xs[i]
	}
	return nil
}

func weekday(date string) string {
	t, err := time.Parse("2006-01-02", date)
	if err != nil {
		return ""
	}
	return t.Weekday().String()
}

// conditions puts a WMO weather interpretation code into words.
func conditions(code *int) string {
	if code == nil {
		return "unknown"
	}
	if s, ok := wmoCodes[*code]; ok {
		return s
	}
	return fmt.Sprintf("unknown (WMO code %d)", *code)
}

// wmoCodes are the WMO weather interpretation codes Open-Meteo reports.
var wmoCodes = map[int]string{
	0:  "Clear sky",
	1:  "Mainly clear",
	2:  "Partly cloudy",
	3:  "Overcast",
	45: "Fog",
	48: "Depositing rime fog",
	51: "Light drizzle",
	53: "Moderate drizzle",
	55: "Dense drizzle",
	56: "Light freezing drizzle",
	57: "Dense freezing drizzle",
	61: "Slight rain",
	63: "Moderate rain",
	65: "Heavy rain",
	66: "Light freezing rain",
	67: "Heavy freezing rain",
	71: "Slight snowfall",
	73: "Moderate snowfall",
	75: "Heavy snowfall",
	77: "Snow grains",
	80: "Slight rain showers",
	81: "Moderate rain showers",
	82: "Violent rain showers",
	85: "Slight snow showers",
	86: "Heavy snow showers",
	95: "Thunderstorm",
	96: "Thunderstorm with slight hail",
	99: "Thunderstorm with heavy hail",
}
