package sampletable

// The walks of indexed text: a level's keys and values read from the
// index (jsonindex.go), a string or container passed over in one step.
// Numbers and literals are not in the index: a walk finds the end of one
// by its bytes, which are few.

// indexed is the value of entry at of ix: a string or container whose
// walks read the index.
func (ix *jsonIndex) indexed(at uint32) value {
	e := ix.entries[at]
	return value{raw: ix.text[e.start:e.end], ix: ix, at: at}
}

// valueAt is the value that starts at offset p, whose entry, if it is a
// string or container, is at; next is the entry after it.
func (ix *jsonIndex) valueAt(p int, at uint32) (v value, end int, next uint32) {
	s := ix.text
	switch s[p] {
	case '"', '{', '[':
		e := ix.entries[at]
		return value{raw: s[p:e.end], ix: ix, at: at}, int(e.end), e.next
	}
	end = p
	for end < len(s) && !endsScalar(s[end]) {
		end++
	}
	return value{raw: s[p:end]}, end, at
}

// members calls fn with the raw key (quotes included) and the value of
// each member of the object at entry at, in text order, and stops at fn's
// first error.
func (ix *jsonIndex) members(at uint32, fn func(key string, v value) error) error {
	return ix.eachMember(at, false, fn)
}

// keyedMembers is members with each key unquoted: a projection's walk,
// which compares keys, calls fn itself rather than through a closure that
// unquotes, a call saved a member.
func (ix *jsonIndex) keyedMembers(at uint32, fn func(key string, v value) error) error {
	return ix.eachMember(at, true, fn)
}

func (ix *jsonIndex) eachMember(at uint32, unquoted bool, fn func(key string, v value) error) error {
	s := ix.text
	i := skipSpace(s, int(ix.entries[at].start)+1)
	if s[i] == '}' {
		return nil
	}
	for k := at + 1; ; {
		kend := int(ix.entries[k].end)
		key := s[i:kend]
		if unquoted {
			key = unquote(key)
		}
		v, end, next := ix.valueAt(skipSpace(s, skipSpace(s, kend)+1), k+1) // past the colon
		if err := fn(key, v); err != nil {
			return err
		}
		if i = skipSpace(s, end); s[i] == '}' {
			return nil
		}
		i, k = skipSpace(s, i+1), next
	}
}

// elements calls fn with the index and value of each element of the array
// at entry at, in order, and stops at fn's first error.
func (ix *jsonIndex) elements(at uint32, fn func(n int, v value) error) error {
	s := ix.text
	i := skipSpace(s, int(ix.entries[at].start)+1)
	if s[i] == ']' {
		return nil
	}
	k := at + 1
	for n := 0; ; n++ {
		v, end, next := ix.valueAt(i, k)
		if err := fn(n, v); err != nil {
			return err
		}
		if i = skipSpace(s, end); s[i] == ']' {
			return nil
		}
		i, k = skipSpace(s, i+1), next
	}
}
