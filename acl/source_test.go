package acl

import (
	"iter"
	"slices"
)

// sliceSource is a Source over a slice, selecting as the metadata state
// must: by MatchesResource.
type sliceSource []Binding

func (s sliceSource) Bindings(t ResourceType, name string) iter.Seq[Binding] {
	return s.where(func(b Binding) bool { return b.MatchesResource(t, name) })
}

func (s sliceSource) BindingsOfType(t ResourceType) iter.Seq[Binding] {
	return s.where(func(b Binding) bool { return b.ResourceType == t })
}

func (s sliceSource) where(keep func(Binding) bool) iter.Seq[Binding] {
	return func(yield func(Binding) bool) {
		for _, b := range s {
			if keep(b) && !yield(b) {
				return
			}
		}
	}
}

// sloppySource yields every binding it holds, whatever is asked.
type sloppySource []Binding

func (s sloppySource) Bindings(ResourceType, string) iter.Seq[Binding] { return slices.Values(s) }
func (s sloppySource) BindingsOfType(ResourceType) iter.Seq[Binding]   { return slices.Values(s) }

// binding builds a Binding from its fields in the order kafka-acls.sh
// prints them: resource, then entry.
func binding(t ResourceType, pattern PatternType, name, principal, host string, op Operation, perm Permission) Binding {
	return Binding{
		ResourceType: t, ResourceName: name, PatternType: pattern,
		Principal: principal, Host: host, Operation: op, Permission: perm,
	}
}

// allowTopic and denyTopic are the common case: a literal topic binding
// for any host.
func allowTopic(name, principal string, op Operation) Binding {
	return binding(Topic, PatternLiteral, name, principal, Wildcard, op, Allow)
}

func denyTopic(name, principal string, op Operation) Binding {
	return binding(Topic, PatternLiteral, name, principal, Wildcard, op, Deny)
}

func ptr(s string) *string { return &s }
