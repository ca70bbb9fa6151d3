package web

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"adaptbot/identity"
	"adaptbot/telemetry"
)

// TestMetricsAllowed: /metrics is open on loopback; beyond it, only the
// metrics token or whoever may read everything (an admin) opens it.
func TestMetricsAllowed(t *testing.T) {
	admin := identity.Identity{Name: "root", Role: identity.Admin, Method: identity.Token}
	builder := identity.Identity{Name: "bob", Role: identity.Builder, Method: identity.Key}
	for _, tt := range []struct {
		addr, metricsToken, auth string
		who                      identity.Identity
		want                     bool
	}{
		{addr: "127.0.0.1:3000", want: true},
		{addr: "[::1]:3000", want: true},
		{addr: "0.0.0.0:3000", want: false},
		{addr: "0.0.0.0:3000", auth: "Bearer ", want: false},
		{addr: "0.0.0.0:3000", metricsToken: "m3trics", auth: "Bearer m3trics", want: true},
		{addr: "0.0.0.0:3000", metricsToken: "m3trics", auth: "m3trics", want: false},
		{addr: "0.0.0.0:3000", metricsToken: "m3trics", auth: "Bearer wrong", want: false},
		{addr: "0.0.0.0:3000", who: admin, want: true},
		{addr: "0.0.0.0:3000", who: builder, want: false},
	} {
		o := Options{Addr: tt.addr, Loopback: tt.addr != "0.0.0.0:3000", MetricsToken: tt.metricsToken}
		if got := metricsAllowed(o, tt.who, tt.auth); got != tt.want {
			t.Errorf("%+v: allowed %v, want %v", tt, got, tt.want)
		}
	}
}

// TestHandleMetricsStatuses: what a scraper gets beyond loopback.
func TestHandleMetricsStatuses(t *testing.T) {
	m := telemetry.NewMetrics()
	get := func(o Options, auth string) (int, string, string) {
		app := fiber.New(fiber.Config{ErrorHandler: errorHandler(slog.New(slog.DiscardHandler))})
		app.Get("/metrics", (&Server{opts: o, metrics: m}).handleMetrics())
		req := httptest.NewRequest("GET", "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
	}
	if code, _, body := get(Options{Addr: "127.0.0.1:3000", Loopback: true}, ""); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("loopback: %d %.200s", code, body)
	}
	if code, _, body := get(Options{Addr: "0.0.0.0:3000"}, ""); code != 401 || !strings.Contains(body, "ADAPTBOT_METRICS_TOKEN") {
		t.Errorf("beyond loopback without tokens: %d %s", code, body)
	}
	if code, www, _ := get(Options{Addr: "0.0.0.0:3000", MetricsToken: "m"}, "Bearer x"); code != 401 || www == "" {
		t.Errorf("a wrong token: %d, WWW-Authenticate %q", code, www)
	}
	if code, _, body := get(Options{Addr: "0.0.0.0:3000", MetricsToken: "m"}, "Bearer m"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("the metrics token: %d %.200s", code, body)
	}
}
