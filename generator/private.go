package generator

import (
	"fmt"
	"strings"
)

// People's words in stored examples. A tool's examples (examples.json) are
// read by everyone who may read tools, and an exported bundle carries them.
// A build made from people's words (a repair from failure cases, a skill
// from recorded chats) shows the model those words, on the server, but it
// publishes them as examples only where its caller may:
//
//   - a private case (Case.Private) never becomes a stored example, even
//     once it gives a result: it stays in the failure store, private to
//     its authors, with what it gave (CaseResult.Expect), and every later
//     repair runs it again and must still give that (Case.Recheck);
//   - an example the model writes whose input is a private input (the
//     same JSON value, however written: Request.Private, and the inputs
//     of private cases) is not stored, nor run as one of the tool's
//     examples. The examples already stored are kept as they are.
//
// The caller (the service) decides what is private: everything but what
// the caller alone said.

// privateInputs are the private inputs of a build, canonical.
func privateInputs(req Request) map[string]bool {
	out := map[string]bool{}
	for _, in := range req.Private {
		out[canonical(in)] = true
	}
	if req.fix != nil {
		for _, c := range req.fix.cases {
			if c.Private {
				out[canonical(c.Input)] = true
			}
		}
	}
	return out
}

// withoutPrivate returns the examples whose input is not private, and how
// many were left out.
func withoutPrivate(examples []Example, private map[string]bool) ([]Example, int) {
	if len(private) == 0 {
		return examples, 0
	}
	out := make([]Example, 0, len(examples))
	for _, e := range examples {
		if !private[canonical(e.Input)] {
			out = append(out, e)
		}
	}
	return out, len(examples) - len(out)
}

// privateProblem tells the model why examples it wrote were left out, when
// the attempt fails its checks anyway (too few examples left, say).
func privateProblem(dropped int) string {
	return fmt.Sprintf("%d of your examples copied an input people gave (a recorded chat or a failure case): people's inputs are private and are never stored as examples; write every example with input values of your own", dropped)
}

// privateNote is what the repair prompt says of private cases.
const privateNote = `Inputs marked (private) are people's words: never copy them into your examples. They are run against your version here, now and in every later repair, and that is enough.`

// caseLabel marks a case in the prompt: private, or fixed by an earlier
// repair and run again.
func caseLabel(c Case) string {
	var marks []string
	if c.Private {
		marks = append(marks, "private")
	}
	switch {
	case c.Recheck && c.Expect != "":
		marks = append(marks, fmt.Sprintf("fixed by an earlier repair: it must still give a result containing %q", c.Expect))
	case c.Recheck:
		marks = append(marks, "fixed by an earlier repair: it must still give a result or a clear error")
	}
	if len(marks) == 0 {
		return ""
	}
	return " (" + strings.Join(marks, "; ") + ")"
}

// hasPrivate reports whether any case is private.
func hasPrivate(cases []Case) bool {
	for _, c := range cases {
		if c.Private {
			return true
		}
	}
	return false
}
