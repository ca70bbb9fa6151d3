package provider

import (
	"strings"
	"testing"
)

// TestModelStatusHidesCredentials checks that a base URL's user and password,
// which the model check needs, never reach /healthz or the page's banner.
func TestModelStatusHidesCredentials(t *testing.T) {
	for _, c := range []Config{
		{OpenAIBaseURL: "http://alice:s3cret@llm.internal:8080"},
		{Provider: "ollama", OllamaHost: "http://bob:hunter2@ollama.internal:11434"},
	} {
		st := NewCheck(c).Status()
		if strings.Contains(st.URL, "s3cret") || strings.Contains(st.URL, "hunter2") || strings.Contains(st.URL, "@") {
			t.Errorf("status URL %q carries credentials", st.URL)
		}
		if !strings.Contains(st.URL, ".internal") {
			t.Errorf("status URL %q lost its host", st.URL)
		}
	}
}
