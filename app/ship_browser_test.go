package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserImportBundle imports a bundle from the tools page: a tampered
// one is refused with the file named, a good one adds its tools to the list.
func TestBrowserImportBundle(t *testing.T) {
	t.Parallel()
	chrome := browserPath(t)
	from := toolsHome(t, "calculator", "text_stats")
	bundle := filepath.Join(t.TempDir(), "tools.tar.gz")
	if out, err := runEnv(t, cliEnv(from, closedAddr(t)), nil, "tools", "export", "calculator", "text_stats", "--bundle", bundle); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.tar.gz")
	os.WriteFile(tampered, retar(t, raw, "tools/text_stats/examples.json", "[]"), 0o644)

	_, addr := shipServer(t, toolsHome(t, "unit_converter"), nil)
	ctx := browse(t, chrome)
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate("http://"+addr+"/tools"),
		chromedp.WaitVisible(chromedp.ID("import-open")),
		chromedp.Click(chromedp.ID("import-open")),
		chromedp.WaitVisible(chromedp.ID("import-form")),
		chromedp.SetUploadFiles(chromedp.ID("bundle"), []string{tampered}),
		chromedp.Click(chromedp.ID("import-go")),
		chromedp.Poll[chromedp.Void](`document.getElementById('import-out').textContent.includes('Nothing was imported (file tools/text_stats/examples.json)')`, chromedp.WithPollingTimeout(15*time.Second)),
	)
	if err != nil {
		t.Fatalf("tampered bundle: %v", err)
	}
	err = chromedp.Do(ctx,
		chromedp.SetUploadFiles(chromedp.ID("bundle"), []string{bundle}),
		chromedp.Click(chromedp.ID("import-go")),
		chromedp.Poll[chromedp.Void](`document.getElementById('import-out').textContent.includes('calculator: imported as version 1, serving')`, chromedp.WithPollingTimeout(30*time.Second)),
	)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	screenshot(t, ctx, "tools-import")
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("import-reload")),
		chromedp.WaitNotPresent(chromedp.ID("import-reload")),
		chromedp.WaitVisible(chromedp.ID("tools")),
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('#tools tbody tr')].map(r => r.dataset.name).join() === 'calculator,text_stats,unit_converter'`, chromedp.WithPollingTimeout(10*time.Second)),
	)
	if err != nil {
		t.Fatalf("the list after the import: %v", err)
	}
	// The open form fits a phone.
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Click(chromedp.ID("import-open")),
		chromedp.WaitVisible(chromedp.ID("import-form")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); err != nil || width > 390 {
		t.Errorf("/tools with the import open is %d px wide at 390 (%v)", width, err)
	}
	screenshot(t, ctx, "390-tools-import")
}
