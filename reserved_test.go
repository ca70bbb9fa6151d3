package adaptbot_test

import (
	"strings"
	"testing"

	"adaptbot"
)

// TestReservedName: the words the chat and the CSV use for themselves, and
// every name under their prefixes, present and future, are refused with
// the word and the reason; other names pass.
func TestReservedName(t *testing.T) {
	for _, name := range []string{"general", "need_tool", "request_tools", "build", "build_create", "build_tool",
		"build_something_new", "users_add", "users_later"} {
		err := adaptbot.ReservedName(name)
		if err == nil {
			t.Errorf("ReservedName(%q) = nil, want an error", name)
			continue
		}
		if adaptbot.KindOf(err) != adaptbot.Invalid || !strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("ReservedName(%q) = %v (kind %s), want Invalid naming the word and saying it is reserved", name, err, adaptbot.KindOf(err))
		}
	}
	for _, name := range []string{"calculator", "general_knowledge", "builder", "rebuild", "users", "need_tools", "my_build_tool"} {
		if err := adaptbot.ReservedName(name); err != nil {
			t.Errorf("ReservedName(%q) = %v, want nil", name, err)
		}
	}
}
