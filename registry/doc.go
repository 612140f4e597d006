// Package registry is strata's built-in schema registry: Confluent's
// Schema Registry REST API, served by every broker on its own listener
// (--schema.registry.listen, 8081 by default), over schemas kept in the
// metadata group (meta/schemas.go), so there is no separate service to run
// and every broker answers alike: a read answered from a broker's own
// state, which may trail the group's by a commit, that finds no subject,
// version or schema is answered again from a linearizable read, so an id
// one broker just handed a serializer is found on any other; and the
// broker's check of produced records against it (validate.go).
//
// # Usage
//
//	reg, err := registry.New(metaNode, logger, prometheusRegisterer)
//	http.Serve(ln, reg.Handler())     // the REST API
//	ingest.Deps{Schemas: reg, …}      // schema validation on produce
//
// # API
//
// The routes are Confluent's (http.go): /subjects, /subjects/{s}/versions
// (register, list, get, delete, referencedby), POST /subjects/{s} (lookup),
// /schemas (every subject's versions), /schemas/ids/{id} (and /schema,
// /subjects, /versions), /schemas/types,
// /compatibility/subjects/{s}/versions[/{v}], /config[/{s}] and
// /mode[/{s}] (READWRITE and READONLY; IMPORT is refused), with
// Confluent's error bodies ({"error_code": 40401, "message": …}; the
// HTTP status is the code's first three digits). Schemas are AVRO,
// PROTOBUF or JSON (JSON Schema), parsed and checked by package schema.
// The default compatibility level is BACKWARD_TRANSITIVE (Confluent's is
// BACKWARD): a new version must read everything the subject ever held.
//
// # Registration
//
// Register parses the schema with its references resolved (transitively,
// from the subjects and versions they name), answers the id of a live
// version holding the same schema (same type, canonical form and
// references), else checks it against the subject's live versions at the
// subject's level and proposes meta.RegisterSchema naming the latest
// version it checked against. A registration that raced another is
// refused by meta (ErrSchemaConflict) and checked again. meta gives the
// same global id to the same schema under any subject, and never reuses
// an id. Parsed schemas are cached by id.
//
// # Validation on produce
//
// validate.go: a topic with confluent.value.schema.validation (or .key.)
// refuses, with INVALID_RECORD naming the record, a batch with a value
// (key) that does not start with the wire format (magic byte 0, a
// four-byte schema id) or whose id is not a live version of <topic>-value
// (<topic>-key); with strata.schema.validation.decode, also one that does
// not decode with that schema. Null values and keys pass.
//
// # Security
//
// cmd/strata serves the API with the admin address's TLS, and once a
// listener authenticates asks every request for a credential: a client
// certificate, the admin token, or a user's password by HTTP Basic
// authentication (Confluent clients' basic.auth.user.info), checked
// against the user's SCRAM credential. Any authenticated user may read;
// changes (registrations, deletes, settings) need Alter on the cluster
// (an ACL, or super.users), as a serializer that registers its schemas
// must have. There are no per-subject ACLs. A schema's text is at most
// 1 MiB: each registration is one Raft command.
//
// # Metrics
//
// MetricNames: registrations, compatibility failures, records refused on
// produce by reason.
package registry
