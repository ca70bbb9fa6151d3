package benchmarks

import (
	"testing"
	"time"

	"adaptbot"
)

// TestCategoriesAreReserved: no tool can take a name the CSV uses for a
// category of its own, or the report's and dashboard's filter for every
// build, so a tool's rows never read as the model's, a build's or a
// change to the users.
func TestCategoriesAreReserved(t *testing.T) {
	for _, c := range []string{adaptbot.CategoryGeneral, adaptbot.CategoryNeedTool, adaptbot.CategoryBuildCreate, adaptbot.CategoryBuildModify, adaptbot.CategoryBuildDelete,
		adaptbot.CategoryBuildRollback, adaptbot.CategoryBuildApprove, adaptbot.CategoryBuildTest, adaptbot.CategoryBuildPlan, adaptbot.CategoryBuildImport, adaptbot.CategoryBuildSkill,
		PathBuild, "users_add", "users_role", "users_rotate", "users_remove", "users_end_sessions"} {
		if adaptbot.ReservedName(c) == nil {
			t.Errorf("%q is a category or filter of the CSV, but adaptbot.ReservedName lets a tool take it", c)
		}
	}
}

// TestUsersCategoriesAreNotTools: a change to the users (a MANAGE row,
// category users_<what>) is labelled as one, and its category is not taken
// for a tool that ran.
func TestUsersCategoriesAreNotTools(t *testing.T) {
	s := NewStore()
	s.Add(Row{Timestamp: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), Intent: adaptbot.IntentManage, Category: "users_add", RequestID: "u1"})
	if got := PathLabel("users_add"); got != "a change to the users: add" {
		t.Errorf("PathLabel(users_add) = %q", got)
	}
	if n := s.Query(Filter{Tool: "users_add"}).Requests; n != 0 {
		t.Errorf("tool=users_add selects %d rows: the category taken for a tool", n)
	}
	if n := s.Query(Filter{Path: "users_add"}).Requests; n != 1 {
		t.Errorf("path=users_add selects %d rows, want 1", n)
	}
}
