package service

import (
	"encoding/json"

	"adaptbot/failures"
	"adaptbot/generator"
	"adaptbot/identity"
)

// People's words in a tool's examples. A tool's stored examples are read by
// everyone who may read tools (the tool's page and API, `tools show`, MCP,
// bundles), so a repair publishes a failure case as an example only when
// its caller is the case's one author: a builder repairing from their own
// calls. Any other case (someone else's, several people's, one written
// before cases named their authors, or any case in an automatic repair,
// which the server makes) is private: the model still gets it whole, on
// the server, but it becomes no example; what the repaired version gave
// for it is kept with the case (failures.Case.Expect), and every later
// repair runs it again (rechecks). A skill, which the server proposes from
// recorded chats, publishes none of them (skillPrivate).

// publishes reports whether who may make c's arguments one of the tool's
// examples: who alone sent them.
func publishes(who identity.Identity, c failures.Case) bool {
	return who.Known() && who.Pseudonym != "" && len(c.Authors) == 1 && c.Authors[0] == who.Pseudonym
}

// rechecks are the cases of st that an earlier repair fixed without making
// them examples (their arguments are no stored example's input), newest
// first, at most generator.MaxRecheckCases, leaving out those in taken.
func rechecks(st failures.State, taken []failures.Case, examples []byte) []failures.Case {
	stored := map[string]bool{}
	var ex []generator.Example
	if json.Unmarshal(examples, &ex) == nil {
		for _, e := range ex {
			stored[canonicalJSON(e.Input)] = true
		}
	}
	skip := map[string]bool{}
	for _, c := range taken {
		skip[c.ID] = true
	}
	var out []failures.Case
	for _, c := range st.Cases {
		if len(out) == generator.MaxRecheckCases {
			break
		}
		if c.FixedIn > 0 && c.Exact && c.Status == failures.Open && failures.Repairable(c.Kind) && !skip[c.ID] && !stored[canonicalJSON(c.Args)] {
			out = append(out, c)
		}
	}
	return out
}

// keepExpected keeps with each private case a repair turned into a result
// what its version gave, for later repairs to check.
func keepExpected(store *failures.Store, name string, results []generator.CaseResult) {
	for _, r := range results {
		if r.Expect != "" {
			store.Expect(name, r.ID, r.Expect) //nolint:errcheck // the case was just read; one dropped since needs no check
		}
	}
}

// canonicalJSON re-encodes JSON with sorted keys and no spaces, so that
// equal values compare equal however they were written.
func canonicalJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
