package benchmarks

import (
	"testing"

	"adaptbot"
)

// TestCategoriesAreReserved: no tool can take a name the CSV uses for a
// category of its own, or the report's and dashboard's filter for every
// build, so a tool's rows never read as the model's, a build's or a
// change to the users.
func TestCategoriesAreReserved(t *testing.T) {
	for _, c := range []string{CategoryGeneral, CategoryNeedTool, CategoryBuildCreate, CategoryBuildModify, CategoryBuildDelete,
		CategoryBuildRollback, CategoryBuildApprove, CategoryBuildTest, CategoryBuildPlan, CategoryBuildImport, CategoryBuildSkill,
		PathBuild, "users_add", "users_role", "users_rotate", "users_remove", "users_end_sessions"} {
		if adaptbot.ReservedName(c) == nil {
			t.Errorf("%q is a category or filter of the CSV, but adaptbot.ReservedName lets a tool take it", c)
		}
	}
}
