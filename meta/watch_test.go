package meta

import (
	"errors"
	"testing"
)

func TestWatchHub(t *testing.T) {
	t.Parallel()
	hub := newWatchHub()
	s0 := newState()
	cur := s0
	current := func() *State { return cur }
	all := hub.watch(current, WatchOptions{Buffer: 2})
	topics := hub.watch(current, WatchOptions{Kinds: []ChangeKind{ChangeTopic}, Buffer: 8})
	for _, w := range []*Watch{all, topics} {
		if up := <-w.C; up.State != s0 || up.Changes[0].Kind != ChangeSnapshot {
			t.Fatalf("first update %+v", up)
		}
	}
	// A publish of the state a watch started from is not sent twice.
	hub.publish(s0, []Change{{Kind: ChangeTopic}})
	if len(all.C) != 0 || len(topics.C) != 0 {
		t.Fatal("the initial state was delivered twice")
	}
	offsets := []Change{{Kind: ChangeOffsets, Group: "g"}}
	for range 3 {
		cur = newState()
		hub.publish(cur, offsets)
	}
	// all: two updates buffered, the third overflowed and ended it.
	n := 0
	for range all.C {
		n++
	}
	if n != 2 || !errors.Is(all.Err(), ErrWatchOverflow) {
		t.Fatalf("%d updates, err %v", n, all.Err())
	}
	if len(topics.C) != 0 {
		t.Fatal("a topic watch got offset changes")
	}
	cur = newState()
	hub.publish(cur, []Change{{Kind: ChangeOffsets}, {Kind: ChangeTopic, Topic: "t"}})
	if up := <-topics.C; len(up.Changes) != 1 || up.Changes[0].Topic != "t" || up.State != cur {
		t.Fatalf("filtered update %+v", up)
	}
	hub.close(ErrClosed)
	if _, open := <-topics.C; open || !errors.Is(topics.Err(), ErrClosed) {
		t.Fatalf("after close: %v", topics.Err())
	}
	late := hub.watch(current, WatchOptions{})
	if _, open := <-late.C; open || !errors.Is(late.Err(), ErrClosed) {
		t.Fatal("a watch on a closed hub is open")
	}
	late.Cancel() // harmless
}

func TestChangeKindNames(t *testing.T) {
	t.Parallel()
	for k := ChangeSnapshot; k < maxChangeKind; k++ {
		if s := k.String(); s == "" || s[0] == 'C' {
			t.Errorf("kind %d has no name", k)
		}
	}
}
