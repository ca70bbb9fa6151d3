package toolbox

import "testing"

func TestOfServers(t *testing.T) {
	known := OfServers(func() []string { return []string{"files", "my__srv"} })
	for name, want := range map[string]bool{
		"files__read": true, "files/read": true, "my__srv__get": true,
		"files__": false, "files": false, "filesx__read": false, "other__read": false, "calculator": false,
	} {
		if got := known(name); got != want {
			t.Errorf("OfServers(...)(%q) = %v, want %v", name, got, want)
		}
	}
	if OfServers(func() []string { return nil })("files__read") {
		t.Error("a tool is known without servers")
	}
}
