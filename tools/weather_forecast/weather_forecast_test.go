package weather_forecast

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"adaptbot/contract/contracttest"
	"adaptbot/toolkit"
)

const berlinJSON = `{"results":[{"id":2950159,"name":"Berlin","latitude":52.52437,"longitude":13.41053,"elevation":74.0,
"feature_code":"PPLC","country_code":"DE","admin1_id":2950157,"timezone":"Europe/Berlin","population":3426354,
"country_id":2921044,"country":"Germany","admin1":"Land Berlin"}],"generationtime_ms":0.93}`

const notFoundJSON = `{"generationtime_ms":0.52}`

const forecastJSON = `{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.07,"utc_offset_seconds":3600,
"timezone":"Europe/Berlin","timezone_abbreviation":"GMT+1","elevation":38.0,
"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C","relative_humidity_2m":"%",
"apparent_temperature":"°C","weather_code":"wmo code","wind_speed_10m":"km/h"},
"current":{"time":"2025-01-15T14:00","interval":900,"temperature_2m":3.4,"relative_humidity_2m":81,
"apparent_temperature":-0.8,"weather_code":3,"wind_speed_10m":14.2},
"daily_units":{"time":"iso8601","weather_code":"wmo code","temperature_2m_max":"°C","temperature_2m_min":"°C",
"precipitation_probability_max":"%"},
"daily":{"time":["2025-01-15","2025-01-16","2025-01-17"],"weather_code":[3,61,null],
"temperature_2m_max":[4.1,5.2,2.0],"temperature_2m_min":[-1.0,1.3,-2.5],"precipitation_probability_max":[10,85,null]}}`

const forecastFahrenheitJSON = `{"timezone":"Europe/Berlin",
"current_units":{"temperature_2m":"°F","wind_speed_10m":"mp/h"},
"current":{"time":"2025-01-15T14:00","temperature_2m":38.1,"relative_humidity_2m":81,
"apparent_temperature":30.6,"weather_code":95,"wind_speed_10m":8.8},
"daily":{"time":["2025-01-15"],"weather_code":[0],"temperature_2m_max":[39.4],"temperature_2m_min":[30.2],
"precipitation_probability_max":[0]}}`

// fakeOpenMeteo serves canned answers for both Open-Meteo hosts on loopback
// and records what was asked.
type fakeOpenMeteo struct {
	geocoding, forecast func(w http.ResponseWriter, r *http.Request)

	mu   sync.Mutex
	reqs []*url.URL
}

func (f *fakeOpenMeteo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r.URL)
	f.mu.Unlock()
	switch r.URL.Path {
	case "/v1/search":
		f.geocoding(w, r)
	case "/v1/forecast":
		f.forecast(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeOpenMeteo) requests() []*url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*url.URL(nil), f.reqs...)
}

func answer(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

// serve starts f and returns a context whose toolkit calls reach it.
func serve(t *testing.T, f *fakeOpenMeteo) context.Context {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := toolkit.NewClient(toolkit.Options{
		Policy:  toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Timeout: 5 * time.Second,
		Rewrite: map[string]string{"api.open-meteo.com": srv.URL, "geocoding-api.open-meteo.com": srv.URL},
	})
	return toolkit.WithClient(context.Background(), client)
}

func ptr(v float64) *float64 { return &v }

func TestExecute(t *testing.T) {
	f := &fakeOpenMeteo{geocoding: answer(200, berlinJSON), forecast: answer(200, forecastJSON)}
	ctx := serve(t, f)

	got, err := Execute(ctx, Input{City: "  Berlin "})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	want := Output{
		Location:  "Berlin, Land Berlin, Germany",
		Latitude:  52.52437,
		Longitude: 13.41053,
		Timezone:  "Europe/Berlin",
		Units:     Units{Temperature: "°C", WindSpeed: "km/h", Humidity: "%", Probability: "%"},
		Current: Current{
			Time: "2025-01-15T14:00", Conditions: "Overcast",
			Temperature: ptr(3.4), FeelsLike: ptr(-0.8), Humidity: ptr(81), WindSpeed: ptr(14.2),
			Summary: "Overcast, 3.4 °C (feels like -0.8 °C), humidity 81%, wind 14.2 km/h.",
		},
		Forecast: []Day{
			{Date: "2025-01-15", Weekday: "Wednesday", Conditions: "Overcast", High: ptr(4.1), Low: ptr(-1), PrecipitationProbability: ptr(10)},
			{Date: "2025-01-16", Weekday: "Thursday", Conditions: "Slight rain", High: ptr(5.2), Low: ptr(1.3), PrecipitationProbability: ptr(85)},
			{Date: "2025-01-17", Weekday: "Friday", Conditions: "unknown", High: ptr(2), Low: ptr(-2.5)},
		},
	}
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.MarshalIndent(got, "", "  ")
		wantJSON, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("Execute:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	// Numbers the service left out are null: the output schema allows it.
	contracttest.CheckResult(t, "weather_forecast", got)
}

// TestRequests checks the URLs the tool asks for.
func TestRequests(t *testing.T) {
	tests := []struct {
		name          string
		in            Input
		wantName      string
		wantDays      string
		wantTempUnit  string
		wantWindUnit  string
		forecastReply string
	}{
		{"defaults", Input{City: "Berlin"}, "Berlin", "3", "", "", forecastJSON},
		{"one day", Input{City: "Berlin", Days: 1}, "Berlin", "1", "", "", forecastJSON},
		{"a week in celsius", Input{City: "Berlin", Days: 7, Units: "Celsius"}, "Berlin", "7", "", "", forecastJSON},
		{"fahrenheit", Input{City: "Berlin", Days: 5, Units: "fahrenheit"}, "Berlin", "5", "fahrenheit", "mph", forecastFahrenheitJSON},
		{"imperial", Input{City: "Berlin", Units: "imperial"}, "Berlin", "3", "fahrenheit", "mph", forecastFahrenheitJSON},
		{"escaped name", Input{City: "São  Paulo & Co, Brazil"}, "São Paulo & Co, Brazil", "3", "", "", forecastJSON},
	}
	for _, tt := range tests {
		f := &fakeOpenMeteo{geocoding: answer(200, berlinJSON), forecast: answer(200, tt.forecastReply)}
		ctx := serve(t, f)
		if _, err := Execute(ctx, tt.in); err != nil {
			t.Errorf("%s: Execute: %v", tt.name, err)
			continue
		}
		reqs := f.requests()
		if len(reqs) != 2 {
			t.Errorf("%s: %d requests, want 2 (geocoding, forecast): %v", tt.name, len(reqs), reqs)
			continue
		}
		geo, fc := reqs[0], reqs[1]
		wantGeo := url.Values{"name": {tt.wantName}, "count": {"1"}, "language": {"en"}, "format": {"json"}}
		if geo.Path != "/v1/search" || !reflect.DeepEqual(geo.Query(), wantGeo) {
			t.Errorf("%s: geocoding request %s, want /v1/search with %v", tt.name, geo, wantGeo)
		}
		wantFc := url.Values{
			"latitude":      {"52.52437"},
			"longitude":     {"13.41053"},
			"current":       {"temperature_2m,relative_humidity_2m,apparent_temperature,weather_code,wind_speed_10m"},
			"daily":         {"weather_code,temperature_2m_max,temperature_2m_min,precipitation_probability_max"},
			"timezone":      {"auto"},
			"forecast_days": {tt.wantDays},
		}
		if tt.wantTempUnit != "" {
			wantFc["temperature_unit"] = []string{tt.wantTempUnit}
			wantFc["wind_speed_unit"] = []string{tt.wantWindUnit}
		}
		if fc.Path != "/v1/forecast" || !reflect.DeepEqual(fc.Query(), wantFc) {
			t.Errorf("%s: forecast request %s,\nwant /v1/forecast with %v", tt.name, fc, wantFc)
		}
	}
}

func TestFahrenheitUsesTheServiceUnits(t *testing.T) {
	f := &fakeOpenMeteo{geocoding: answer(200, berlinJSON), forecast: answer(200, forecastFahrenheitJSON)}
	got, err := Execute(serve(t, f), Input{City: "Berlin", Units: "F"})
	if err != nil {
		t.Fatal(err)
	}
	// The units are the ones the service reports, even the odd "mp/h".
	if want := (Units{Temperature: "°F", WindSpeed: "mp/h", Humidity: "%", Probability: "%"}); got.Units != want {
		t.Errorf("Units = %+v, want %+v", got.Units, want)
	}
	if want := "Thunderstorm, 38.1 °F (feels like 30.6 °F), humidity 81%, wind 8.8 mp/h."; got.Current.Summary != want {
		t.Errorf("Summary = %q, want %q", got.Current.Summary, want)
	}
	if len(got.Forecast) != 1 || got.Forecast[0].Conditions != "Clear sky" || *got.Forecast[0].PrecipitationProbability != 0 {
		t.Errorf("Forecast = %+v", got.Forecast)
	}
}

func TestServiceErrors(t *testing.T) {
	tests := []struct {
		name         string
		geocoding    func(http.ResponseWriter, *http.Request)
		forecast     func(http.ResponseWriter, *http.Request)
		wantErr      []string
		wantRequests int
	}{
		{"city not found", answer(200, notFoundJSON), answer(200, forecastJSON),
			[]string{`no place called "Atlantis" was found`, "check the spelling"}, 1},
		{"empty results", answer(200, `{"results":[]}`), answer(200, forecastJSON),
			[]string{`no place called "Atlantis" was found`}, 1},
		{"geocoding 500", answer(500, `{"error":true,"reason":"boom"}`), answer(200, forecastJSON),
			[]string{`weather service, looking up "Atlantis"`, "status 500", "boom"}, 1},
		{"geocoding bad JSON", answer(200, `<html>`), answer(200, forecastJSON),
			[]string{`looking up "Atlantis"`, "decode JSON"}, 1},
		{"forecast 500", answer(200, berlinJSON), answer(500, "internal error"),
			[]string{"weather service, forecast for Berlin, Land Berlin, Germany", "status 500"}, 2},
		{"forecast 400", answer(200, berlinJSON), answer(400, `{"error":true,"reason":"Latitude must be in range"}`),
			[]string{"status 400", "Latitude must be in range"}, 2},
	}
	for _, tt := range tests {
		f := &fakeOpenMeteo{geocoding: tt.geocoding, forecast: tt.forecast}
		got, err := Execute(serve(t, f), Input{City: "Atlantis"})
		if err == nil {
			t.Errorf("%s: Execute = %+v, want an error", tt.name, got)
			continue
		}
		for _, want := range tt.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q, want it to contain %q", tt.name, err, want)
			}
		}
		if n := len(f.requests()); n != tt.wantRequests {
			t.Errorf("%s: %d requests, want %d", tt.name, n, tt.wantRequests)
		}
	}
}

func TestInputErrors(t *testing.T) {
	tests := []struct {
		in      Input
		wantErr string
	}{
		{Input{City: ""}, "city is empty"},
		{Input{City: " \t "}, "city is empty"},
		{Input{City: strings.Repeat("x", 101)}, "longer than 100 characters"},
		{Input{City: "Berlin", Days: 8}, "days must be from 1 to 7, got 8"},
		{Input{City: "Berlin", Days: -1}, "days must be from 1 to 7, got -1"},
		{Input{City: "Berlin", Units: "kelvin"}, `units must be celsius or fahrenheit, got "kelvin"`},
	}
	for _, tt := range tests {
		f := &fakeOpenMeteo{geocoding: answer(200, berlinJSON), forecast: answer(200, forecastJSON)}
		_, err := Execute(serve(t, f), tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Execute(%+v) error = %v, want %q", tt.in, err, tt.wantErr)
		}
		if n := len(f.requests()); n != 0 {
			t.Errorf("Execute(%+v) made %d requests, want none", tt.in, n)
		}
	}
}

func TestReportToleratesShortArrays(t *testing.T) {
	f := forecastResponse{Daily: dailyData{Time: []string{"2025-01-15", "not a date"}, TemperatureMax: []*float64{ptr(1)}}}
	got := report(place{Name: "X", CountryCode: "XX"}, f, false)
	want := []Day{
		{Date: "2025-01-15", Weekday: "Wednesday", Conditions: "unknown", High: ptr(1)},
		{Date: "not a date", Conditions: "unknown"},
	}
	if !reflect.DeepEqual(got.Forecast, want) {
		t.Errorf("Forecast = %+v, want %+v", got.Forecast, want)
	}
	if got.Location != "X, XX" || got.Units.Temperature != "°C" || got.Current.Summary != "unknown." {
		t.Errorf("got %+v", got)
	}
}

func TestConditions(t *testing.T) {
	code := func(c int) *int { return &c }
	tests := []struct {
		code *int
		want string
	}{
		{code(0), "Clear sky"},
		{code(2), "Partly cloudy"},
		{code(45), "Fog"},
		{code(65), "Heavy rain"},
		{code(75), "Heavy snowfall"},
		{code(82), "Violent rain showers"},
		{code(99), "Thunderstorm with heavy hail"},
		{code(42), "unknown (WMO code 42)"},
		{nil, "unknown"},
	}
	for _, tt := range tests {
		if got := conditions(tt.code); got != tt.want {
			t.Errorf("conditions(%v) = %q, want %q", tt.code, got, tt.want)
		}
	}
}

func TestContract(t *testing.T) {
	contracttest.Check(t, "weather_forecast", contracttest.Want{
		Category:    "weather",
		Timeout:     20 * time.Second,
		Description: "Reports the current weather",
		Properties:  map[string]string{"city": "string", "days": "integer", "units": "string"},
		Required:    []string{"city"},
		Output: map[string]string{
			"location": "string", "latitude": "number", "longitude": "number", "timezone": "string",
			"units": "object", "current": "object", "forecast": "array|null",
		},
	})
}
