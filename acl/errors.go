package acl

import "errors"

// Sentinel errors. Each is returned wrapped with what was wrong and what is
// wanted; test with errors.Is. A broker answers ErrInvalidBinding and
// ErrInvalidFilter with Kafka's INVALID_REQUEST, as Kafka does.
var (
	// ErrUnknownName means a Parse function was given a name it does not
	// know.
	ErrUnknownName = errors.New("acl: unknown name")
	// ErrInvalidBinding means Binding.Validate refused a binding: one
	// CreateAcls would refuse.
	ErrInvalidBinding = errors.New("acl: invalid binding")
	// ErrInvalidFilter means Filter.Validate refused a filter: one
	// DescribeAcls or DeleteAcls would refuse.
	ErrInvalidFilter = errors.New("acl: invalid filter")
	// ErrInvalidAuthorizer means Authorizer.Validate refused a setting.
	ErrInvalidAuthorizer = errors.New("acl: invalid authorizer config")
)
