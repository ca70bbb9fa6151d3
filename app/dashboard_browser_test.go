package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dashboardState is what the page shows once its script has run.
type dashboardState struct {
	Drawn       map[string]string `json:"drawn"`    // chart id → chart, bars or empty
	Canvases    int               `json:"canvases"` // uPlot canvases
	Cards       []string          `json:"cards"`
	Summary     string            `json:"summary"`
	FirstTrace  string            `json:"firstTrace"`
	Scripts     int               `json:"scripts"` // script elements inside the recent table
	RecentText  string            `json:"recentText"`
	ScrollWidth int               `json:"scrollWidth"`
	ClientWidth int               `json:"clientWidth"`
	// LatencyTicks are the latency chart's y-axis labels, "|"-separated.
	LatencyTicks string `json:"latencyTicks"`
}

const readDashboard = `(() => {
  const drawn = {};
  for (const e of document.querySelectorAll('.plot, .bars')) drawn[e.id] = e.dataset.drawn || '';
  const a = document.querySelector('#recent a.trace-link');
  return {
    drawn, canvases: document.querySelectorAll('.plot canvas').length,
    cards: [...document.querySelectorAll('#cards .card b')].map(b => b.textContent),
    summary: document.getElementById('summary-line').textContent,
    firstTrace: a ? a.getAttribute('href') : '',
    scripts: document.querySelectorAll('#recent script').length,
    recentText: document.querySelector('#recent tbody').textContent,
    scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth,
    latencyTicks: document.getElementById('chart-latency').dataset.ticks || '',
  };
})()`

// loadDashboard opens /dashboard at a width and returns what it shows, with
// a screenshot in ADAPTBOT_SCREENSHOT_DIR when set.
func loadDashboard(t *testing.T, chrome, url string, width int64, shot string) dashboardState {
	t.Helper()
	ctx := browse(t, chrome)
	err := chromedp.Do(ctx,
		chromedp.EmulateViewport(width, 900),
		chromedp.Navigate(url),
		chromedp.Poll[chromedp.Void](`document.body.dataset.loaded === 'true'`, chromedp.WithPollingTimeout(20*time.Second)),
	)
	if err != nil {
		t.Fatalf("dashboard at %d px did not load: %v", width, err)
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[dashboardState](readDashboard))
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("ADAPTBOT_SCREENSHOT_DIR"); dir != "" {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90)); err == nil {
			os.WriteFile(filepath.Join(dir, shot), png, 0o644)
		}
	}
	if st.ScrollWidth > st.ClientWidth {
		t.Errorf("at %d px the page scrolls sideways: %d > %d", width, st.ScrollWidth, st.ClientWidth)
	}
	return st
}

var timeCharts = []string{"chart-requests", "chart-latency", "chart-tokens", "chart-builds"}

// TestBrowserDashboard opens the dashboard over logged rows and over none, at
// desktop width and at 390 px: with data every chart is drawn, without data
// every chart says so and no figure reads 0.000.
func TestBrowserDashboard(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)

	t.Run("with data", func(t *testing.T) {
		in := start(t, nil, func(dir string) { seedBenchmarks(t, dir) })
		for _, width := range []int64{1280, 390} {
			st := loadDashboard(t, chrome, in.url+"/dashboard", width, "dashboard-"+map[int64]string{1280: "desktop", 390: "phone"}[width]+".png")
			for _, id := range timeCharts {
				if st.Drawn[id] != "chart" {
					t.Errorf("%d px: %s = %q, want a chart", width, id, st.Drawn[id])
				}
			}
			for _, id := range []string{"chart-paths", "chart-tools", "chart-attempts", "chart-steps", "chart-errors"} {
				if st.Drawn[id] != "bars" {
					t.Errorf("%d px: %s = %q, want bars", width, id, st.Drawn[id])
				}
			}
			if st.Canvases < len(timeCharts) {
				t.Errorf("%d px: %d canvases, want one per time chart", width, st.Canvases)
			}
			// A trace link opens the trace view, not the JSON (issue 41).
			if st.FirstTrace != "/requests/multi-1" {
				t.Errorf("first trace link = %q, want the trace view /requests/multi-1", st.FirstTrace)
			}
			if st.Scripts != 0 || !strings.Contains(st.RecentText, "<script>alert(1)</script>") {
				t.Errorf("a query with markup is not shown as text: %d scripts", st.Scripts)
			}
			if len(st.Cards) == 0 || st.Cards[0] != "47" {
				t.Errorf("cards = %v", st.Cards)
			}
		}
		// A filter from the form reaches the API: direct runs only.
		st := loadDashboard(t, chrome, in.url+"/dashboard?intent=RUN&tool=calculator", 1280, "dashboard-runs.png")
		if !strings.HasPrefix(st.Summary, "5 requests") {
			t.Errorf("filtered summary = %q", st.Summary)
		}
		// A direct run's query is its arguments, shown as words, not JSON.
		if !strings.Contains(st.RecentText, "expression: 2+") || strings.Contains(st.RecentText, `{"expression"`) {
			t.Errorf("a run's query is not shown as readable text: %q", st.RecentText)
		}
		// Direct runs take 3 ms: the latency axis reads in milliseconds,
		// not "0" at every tick.
		ticks := strings.Split(st.LatencyTicks, "|")
		distinct := map[string]bool{}
		for _, tick := range ticks {
			distinct[tick] = true
		}
		if len(ticks) < 2 || len(distinct) != len(ticks) || !strings.Contains(st.LatencyTicks, " ms") {
			t.Errorf("latency axis labels %q: want distinct labels in ms", st.LatencyTicks)
		}
	})

	t.Run("no data", func(t *testing.T) {
		in := start(t, nil)
		for _, width := range []int64{1280, 390} {
			st := loadDashboard(t, chrome, in.url+"/dashboard", width, "dashboard-empty-"+map[int64]string{1280: "desktop", 390: "phone"}[width]+".png")
			for id, drawn := range st.Drawn {
				if drawn != "empty" {
					t.Errorf("%d px: %s = %q with no data, want it to say there is none", width, id, drawn)
				}
			}
			if len(st.Drawn) != 11 {
				t.Errorf("%d charts found, want 11", len(st.Drawn))
			}
			for _, c := range st.Cards[1:] {
				if c != "–" {
					t.Errorf("with no data a card reads %q, want –", c)
				}
			}
			if !strings.HasPrefix(st.Summary, "0 requests") {
				t.Errorf("summary = %q", st.Summary)
			}
		}
	})
}

// TestDashboardHasNoInlineScript keeps the page within a Content-Security-
// Policy of script-src 'self': every script is a file, no on* attributes.
func TestDashboardHasNoInlineScript(t *testing.T) {
	in := start(t, nil)
	code, page := in.raw(t, "GET", "/dashboard", "")
	if code != 200 {
		t.Fatalf("GET /dashboard = %d", code)
	}
	for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(page), -1) {
		if !strings.Contains(tag, `src="/static/`) {
			t.Errorf("inline script: %s", tag)
		}
	}
	if m := regexp.MustCompile(`\son[a-z]+=`).FindString(string(page)); m != "" {
		t.Errorf("inline event handler %q", m)
	}
	for _, asset := range []string{"/static/dashboard.js", "/static/dashboard.css", "/static/vendor/uPlot.iife.min.js", "/static/vendor/uPlot.min.css"} {
		if code, _ := in.raw(t, "GET", asset, ""); code != 200 {
			t.Errorf("GET %s = %d", asset, code)
		}
	}
}
