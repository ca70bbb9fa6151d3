package router

// stem reduces an ASCII lower-case English word to its Porter stem (M. F.
// Porter, "An algorithm for suffix stripping", 1980, with the two revisions of
// the published reference implementation: "bli"→"ble" and "logi"→"log").
// Words that are not plain ASCII letters, or shorter than three letters, are
// returned unchanged.
func stem(w string) string {
	if len(w) < 3 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	s := &stemmer{b: []byte(w)}
	s.step1ab()
	if len(s.b) > 2 {
		s.step1c()
		s.step2()
		s.step3()
		s.step4()
		s.step5()
	}
	return string(s.b)
}

// stemmer holds the word being stemmed; j marks the end of the stem that a
// matched suffix leaves behind (b[:j]).
type stemmer struct {
	b []byte
	j int
}

// cons reports whether b[i] is a consonant.
func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.cons(i-1)
	}
	return true
}

// m counts the VC sequences in b[:j]: [C](VC)^m[V].
func (s *stemmer) m() int {
	n, i := 0, 0
	for {
		if i >= s.j {
			return n
		}
		if !s.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i >= s.j {
				return n
			}
			if s.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i >= s.j {
				return n
			}
			if !s.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

// vowelInStem reports whether b[:j] contains a vowel.
func (s *stemmer) vowelInStem() bool {
	for i := 0; i < s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[i-1:i+1] is a double consonant.
func (s *stemmer) doublec(i int) bool {
	return i >= 1 && s.b[i] == s.b[i-1] && s.cons(i)
}

// cvc reports whether b[i-2:i+1] is consonant-vowel-consonant and the last
// consonant is not w, x or y: the stem of a short word like "hop" or "fil".
func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether the word ends with suf, and if so sets j before it.
func (s *stemmer) ends(suf string) bool {
	n := len(suf)
	if n > len(s.b) || string(s.b[len(s.b)-n:]) != suf {
		return false
	}
	s.j = len(s.b) - n
	return true
}

// setTo replaces b[j:] with r.
func (s *stemmer) setTo(r string) {
	s.b = append(s.b[:s.j], r...)
}

// r replaces the suffix with r when the stem has a measure above zero.
func (s *stemmer) r(r string) {
	if s.m() > 0 {
		s.setTo(r)
	}
}

func (s *stemmer) step1ab() {
	if s.b[len(s.b)-1] == 's' {
		switch {
		case s.ends("sses"):
			s.b = s.b[:len(s.b)-2]
		case s.ends("ies"):
			s.setTo("i")
		case len(s.b) > 1 && s.b[len(s.b)-2] != 's':
			s.b = s.b[:len(s.b)-1]
		}
	}
	if s.ends("eed") {
		if s.m() > 0 {
			s.b = s.b[:len(s.b)-1]
		}
		return
	}
	if (s.ends("ed") || s.ends("ing")) && s.vowelInStem() {
		s.b = s.b[:s.j]
		s.j = len(s.b)
		switch {
		case s.ends("at"):
			s.setTo("ate")
		case s.ends("bl"):
			s.setTo("ble")
		case s.ends("iz"):
			s.setTo("ize")
		case s.doublec(len(s.b) - 1):
			switch s.b[len(s.b)-1] {
			case 'l', 's', 'z':
			default:
				s.b = s.b[:len(s.b)-1]
			}
		default:
			s.j = len(s.b)
			if s.m() == 1 && s.cvc(len(s.b)-1) {
				s.b = append(s.b, 'e')
			}
		}
	}
}

func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[len(s.b)-1] = 'i'
	}
}

// step2 maps double suffixes to single ones: -ization → -ize and so on.
func (s *stemmer) step2() {
	if len(s.b) < 2 {
		return
	}
	var pairs []string
	switch s.b[len(s.b)-2] {
	case 'a':
		pairs = []string{"ational", "ate", "tional", "tion"}
	case 'c':
		pairs = []string{"enci", "ence", "anci", "ance"}
	case 'e':
		pairs = []string{"izer", "ize"}
	case 'l':
		pairs = []string{"bli", "ble", "alli", "al", "entli", "ent", "eli", "e", "ousli", "ous"}
	case 'o':
		pairs = []string{"ization", "ize", "ation", "ate", "ator", "ate"}
	case 's':
		pairs = []string{"alism", "al", "iveness", "ive", "fulness", "ful", "ousness", "ous"}
	case 't':
		pairs = []string{"aliti", "al", "iviti", "ive", "biliti", "ble"}
	case 'g':
		pairs = []string{"logi", "log"}
	}
	for i := 0; i < len(pairs); i += 2 {
		if s.ends(pairs[i]) {
			s.r(pairs[i+1])
			return
		}
	}
}

// step3 strips -ic-, -full, -ness and the like.
func (s *stemmer) step3() {
	var pairs []string
	switch s.b[len(s.b)-1] {
	case 'e':
		pairs = []string{"icate", "ic", "ative", "", "alize", "al"}
	case 'i':
		pairs = []string{"iciti", "ic"}
	case 'l':
		pairs = []string{"ical", "ic", "ful", ""}
	case 's':
		pairs = []string{"ness", ""}
	}
	for i := 0; i < len(pairs); i += 2 {
		if s.ends(pairs[i]) {
			s.r(pairs[i+1])
			return
		}
	}
}

// step4 strips -ant, -ence and the like from stems of measure above one.
func (s *stemmer) step4() {
	if len(s.b) < 2 {
		return
	}
	var sufs []string
	switch s.b[len(s.b)-2] {
	case 'a':
		sufs = []string{"al"}
	case 'c':
		sufs = []string{"ance", "ence"}
	case 'e':
		sufs = []string{"er"}
	case 'i':
		sufs = []string{"ic"}
	case 'l':
		sufs = []string{"able", "ible"}
	case 'n':
		sufs = []string{"ant", "ement", "ment", "ent"}
	case 'o':
		if s.ends("ion") && s.j > 0 && (s.b[s.j-1] == 's' || s.b[s.j-1] == 't') {
			if s.m() > 1 {
				s.b = s.b[:s.j]
			}
			return
		}
		sufs = []string{"ou"}
	case 's':
		sufs = []string{"ism"}
	case 't':
		sufs = []string{"ate", "iti"}
	case 'u':
		sufs = []string{"ous"}
	case 'v':
		sufs = []string{"ive"}
	case 'z':
		sufs = []string{"ize"}
	}
	for _, suf := range sufs {
		if s.ends(suf) {
			if s.m() > 1 {
				s.b = s.b[:s.j]
			}
			return
		}
	}
}

// step5 removes a final -e and reduces -ll to -l on long stems.
func (s *stemmer) step5() {
	s.j = len(s.b)
	if s.b[len(s.b)-1] == 'e' {
		s.j = len(s.b) - 1
		if a := s.m(); a > 1 || a == 1 && !s.cvc(len(s.b)-2) {
			s.b = s.b[:len(s.b)-1]
		}
	}
	s.j = len(s.b)
	if s.b[len(s.b)-1] == 'l' && s.doublec(len(s.b)-1) && s.m() > 1 {
		s.b = s.b[:len(s.b)-1]
	}
}
