package identity

import "adaptbot"

// Permit checks that who may take action, with the error every door
// answers when not: the one permission check, which each operation makes.
// The edge uses it to refuse a request before decoding it.
func Permit(who Identity, action Action) error {
	if who.Can(action) {
		return nil
	}
	if !who.Known() {
		return &adaptbot.Error{Kind: adaptbot.Unauthenticated, Msg: "sign in first: send Authorization: Bearer <key>, or sign in on the page"}
	}
	return &adaptbot.Error{Kind: adaptbot.Forbidden, Msg: Refusal(who, action)}
}

// Refusal says, in words, why who may not take action and which role may.
func Refusal(who Identity, action Action) string {
	what := map[Action]string{
		Chat:      "chatting",
		ReadTools: "reading the tools",
		ReadOwn:   "reading your requests",
		RunTool:   "running tools directly",
		Build:     "building, changing and testing tools",
		Delete:    "deleting, rolling back and approving tools",
		Manage:    "managing users",
		ReadAll:   "reading everyone's requests, the dashboard and reports",
	}[action]
	need := Need(action)
	if who.Role == "" {
		return what + " needs the " + string(need) + " role"
	}
	return what + " needs the " + string(need) + " role; " + who.Name + " has the " + string(who.Role) + " role"
}
