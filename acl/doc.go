// Package acl is Kafka's ACL model and the authorizer's decision. It is a
// leaf: the metadata state stores Bindings and implements Source, the
// broker asks the Authorizer about every request, and the ACL APIs
// (CreateAcls, DescribeAcls, DeleteAcls) use Validate and Filter.
//
// # Model
//
// A Binding is one ACL: a resource pattern and an entry.
//
//	resource pattern: ResourceType  Topic, Group, Cluster, TransactionalID, DelegationToken, User
//	                  ResourceName  "orders", a prefix, or "*"; the Cluster is "kafka-cluster"
//	                  PatternType   Literal (the name, or every name if "*") or Prefixed
//	entry:            Principal     "User:alice", or "User:*" for every user
//	                  Host          a client IP, or "*"
//	                  Operation     Read, Write, ..., or All
//	                  Permission    Allow or Deny
//
// The enums carry Kafka's wire codes, so they convert to and from kmsg's
// with a plain conversion, and a Binding's JSON holds them as numbers.
// Any, Match and Unknown exist for filters and the wire only: Validate
// refuses them in a Binding, and Filter.Validate refuses Unknown.
//
// # Deciding
//
// Authorize answers one request (principal, host, operation, resource):
//
//	super user                                   allowed
//	an applying Deny of the operation or All     denied
//	an applying Allow of it, All, or one that    allowed
//	  implies it (Read, Write, Delete, Alter
//	  imply Describe; AlterConfigs implies
//	  DescribeConfigs; Deny implies nothing)
//	no binding for the resource at all           AllowIfNoACL
//	otherwise                                    denied
//
// A binding applies when its principal is the request's or the wildcard
// of its type and its host is the request's or "*". AuthorizeAny answers
// whether some resource of a type may be used (Kafka's
// authorizeByResourceType), letting Deny patterns that dominate every
// Allow win.
//
// # Invariants
//
//   - Adding a Deny binding never turns a denied request into an allowed
//     one, for Authorize or AuthorizeAny.
//   - Adding an Allow binding never turns an allowed request into a denied
//     one, except that it gives a resource that had no bindings one, so
//     AllowIfNoACL no longer decides.
//   - The answer depends on the bindings that match the resource, not on
//     what else the Source returns: the Authorizer rechecks each with
//     MatchesResource.
//
// # Differences from Kafka
//
//   - "T:*" is the wildcard for principals of type T; Kafka has the one
//     wildcard "User:*", matching any principal. They agree for the User
//     principals that authenticators produce.
//   - A request whose resource type or operation is Unknown or Any is
//     denied; Kafka throws.
//   - AuthorizeAny decides AllowIfNoACL from whether a literal "*" binding
//     exists rather than by probing a resource named "hardcode", and does
//     not take a prefixed "*" Allow for the wildcard.
package acl
