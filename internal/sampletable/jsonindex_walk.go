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

// pickInto gives picked[j] the value of the last member of the object at
// entry at whose key is keys[j], a name with no escape in it; absent for
// none, as for null. It is one loop over the object's keys in the index,
// each raw key compared with keys, where members would decode each key
// and call back with each value: only the values it gives are read. The
// key after a member's is the entry after its value's when the value has
// one, else the next.
func (ix *jsonIndex) pickInto(at uint32, keys []string, picked []optValue) {
	clear(picked)
	s := ix.text
	for k, end := at+1, ix.entries[at].next; k < end; {
		ke := ix.entries[k]
		p := skipSpace(s, skipSpace(s, int(ke.end))+1) // past the colon
		next := k + 1
		if c := s[p]; c == '"' || c == '{' || c == '[' {
			next = ix.entries[k+1].next
		}
		raw := s[ke.start:ke.end]
		for j, key := range keys {
			if rawKeyIs(raw, key) {
				v, _, _ := ix.valueAt(p, k+1)
				picked[j] = opt(v)
			}
		}
		k = next
	}
}

// rawKeyIs tells whether the key raw (quotes included) decodes to key, a
// name with no escape in it. Only an escape makes a key's text longer
// than what it decodes to, and the bytes before the first escape are the
// decoded key's own: a key is told from another by its first bytes, not
// searched for a backslash.
func rawKeyIs(raw, key string) bool {
	inner := raw[1 : len(raw)-1]
	if len(inner) <= len(key) {
		return inner == key
	}
	i := 0
	for i < len(key) && inner[i] == key[i] {
		i++
	}
	return inner[i] == '\\' && unquote(raw) == key
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
