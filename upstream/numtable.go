package upstream

import "iter"

// numTable keeps the records of calls in flight by the number each was
// given when it was made (a server's calls, by the number in their
// progress tokens; a connection's raw calls, by the number in their ids).
// Those numbers are handed out one after another and most calls end soon
// after the ones before them, so the record numbered n sits in slot
// n mod len(slots) and a lookup is an index, not a hash: the two maps it
// replaced took about 800 instructions of a forwarded call. A record
// whose slot is taken (a call that outlives many later ones) goes to a
// map beside the slots. Numbers are not zero, and a number is in the
// table once. Like a map, it does not shrink; it grows with the calls in
// flight at once, to at most four slots per call. The zero value is an
// empty table; the caller guards it.
type numTable[T any] struct {
	slots []numEntry[T] // a power of two long, or empty
	spill map[uint64]*T // records whose slot was taken
	n     int           // records held
}

type numEntry[T any] struct {
	n uint64
	v *T // nil: the slot is free
}

// put adds v as the record numbered n, which is not in the table.
func (t *numTable[T]) put(n uint64, v *T) {
	if t.n >= len(t.slots)/2 {
		t.grow()
	}
	t.n++
	t.place(n, v)
}

// place puts v in its slot, or in spill when another record holds it.
func (t *numTable[T]) place(n uint64, v *T) {
	if e := &t.slots[n&uint64(len(t.slots)-1)]; e.v == nil {
		*e = numEntry[T]{n, v}
		return
	}
	if t.spill == nil {
		t.spill = make(map[uint64]*T)
	}
	t.spill[n] = v
}

// grow doubles the slots (16 at first) and places every record again.
func (t *numTable[T]) grow() {
	old, spill := t.slots, t.spill
	t.slots, t.spill = make([]numEntry[T], max(16, 2*len(old))), nil
	for _, e := range old {
		if e.v != nil {
			t.place(e.n, e.v)
		}
	}
	for n, v := range spill {
		t.place(n, v)
	}
}

// get returns the record numbered n, or nil.
func (t *numTable[T]) get(n uint64) *T {
	if len(t.slots) > 0 {
		if e := t.slots[n&uint64(len(t.slots)-1)]; e.v != nil && e.n == n {
			return e.v
		}
	}
	return t.spill[n]
}

// take removes the record numbered n and returns it, or nil if there is
// none.
func (t *numTable[T]) take(n uint64) *T {
	if len(t.slots) > 0 {
		if e := &t.slots[n&uint64(len(t.slots)-1)]; e.v != nil && e.n == n {
			v := e.v
			*e = numEntry[T]{}
			t.n--
			return v
		}
	}
	v, ok := t.spill[n]
	if ok {
		delete(t.spill, n)
		t.n--
	}
	return v
}

// len returns how many records the table holds.
func (t *numTable[T]) len() int { return t.n }

// all yields each record with its number, in no set order. The loop may
// take the record it is given.
func (t *numTable[T]) all() iter.Seq2[uint64, *T] {
	return func(yield func(uint64, *T) bool) {
		for i := range t.slots {
			if e := t.slots[i]; e.v != nil && !yield(e.n, e.v) {
				return
			}
		}
		for n, v := range t.spill {
			if !yield(n, v) {
				return
			}
		}
	}
}
