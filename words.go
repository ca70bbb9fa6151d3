package adaptbot

// The words of a request's row and trace, which every door and every store
// says the same way: its intent (what it asked for), its door (where it
// came in), and the categories that are not tool names.

// Intents: what a request asked for (a row's intent column).
const (
	IntentChat  = "CHAT"  // a chat message, whatever the door
	IntentBuild = "BUILD" // a tool built, changed, deleted, tested or imported
	IntentRun   = "RUN"   // a direct tool run
	// IntentFeedback is a person's thumbs up or down on a chat answer: a
	// row of its own (the rated request in RatedRequest, the score in
	// Score), counted apart from requests.
	IntentFeedback = "FEEDBACK"
	// IntentManage is a change to the server's users (an added, removed or
	// rotated user, a role, ended sessions); the category says which, and
	// the query names the user by pseudonym only.
	IntentManage = "MANAGE"
	// IntentApprove is a person's decision on a tool's request that waited
	// for their approval (allowed, allowed for the rest of the chat,
	// denied), or its expiry: a row of its own, whose category is the
	// outcome, whose tools column is the tool, whose query names the
	// approval, the person asked (by pseudonym) and the request's digest,
	// and whose rated_request is the chat or run that asked.
	IntentApprove = "APPROVE"
)

// Doors: where a request came in (a row's door column).
const (
	DoorHTTP     = "http"     // the pages and the HTTP API
	DoorMCP      = "mcp"      // /mcp and adaptbot mcp
	DoorCLI      = "cli"      // the command line, through the server
	DoorInternal = "internal" // the server on its own (an automatic repair)
	DoorOpenAI   = "openai"   // /v1, the OpenAI-compatible API
)

// ClientHeader names the program that sends a request over HTTP; the
// command line sends "cli", so the rows of its requests say DoorCLI.
const ClientHeader = "X-AdaptBot-Client"

// Categories that are not tool names (a row's category column). A chat
// answered by a tool, and a direct run, use the tool's name as category.
const (
	CategoryGeneral     = "general"      // answered by the model alone
	CategoryNeedTool    = "need_tool"    // no tool fits; the user was offered a build
	CategoryBuildCreate = "build_create" // a new tool was built
	CategoryBuildModify = "build_modify" // an existing tool was changed
	CategoryBuildDelete = "build_delete" // a tool was removed
	// Work on a tool that builds nothing new: a version served again, a
	// pending version approved, the stored examples re-run, a build planned.
	CategoryBuildRollback = "build_rollback"
	CategoryBuildApprove  = "build_approve"
	CategoryBuildTest     = "build_test"
	CategoryBuildPlan     = "build_plan"
	// A bundle of tools imported (adaptbot tools import).
	CategoryBuildImport = "build_import"
	// A skill proposed from a chain of tools that recurs in chats.
	CategoryBuildSkill = "build_skill"
)

// The beginnings of categories that name a family of rows: every build_
// category is work on a tool (those above, and any added later), every
// users_ one a change to the server's users (users_add, users_role, ...,
// an IntentManage row's).
const (
	CategoryBuildPrefix = "build_"
	CategoryUsersPrefix = "users_"
)
