// Package sasl is the server side of the SASL mechanisms strata's brokers
// accept (Kafka's SaslHandshake and SaslAuthenticate, KIP-43, KIP-84,
// KIP-152): PLAIN and SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677),
// and the SCRAM credential as it is stored.
//
// A credential is never a password: it is the salt, the iteration count,
// and the StoredKey and ServerKey derived from the salted password, as
// RFC 5802 has servers keep them and as Kafka's AlterUserScramCredentials
// delivers them (the client salts the password; the broker derives the two
// keys and drops the salted password). PLAIN checks a password against the
// same credential: it salts what the client sent with the stored salt and
// compares the StoredKey it derives, in constant time.
//
// An exchange that fails says only that authentication failed, whatever
// the reason, and an unknown user is walked through SCRAM with a made-up
// credential, so neither the answer nor the number of round trips of one
// broker process tells a client which users exist. The made-up salt is
// stable per name only for the life of the process: a client comparing
// the salts two brokers (or one before and after a restart) give for a
// name can tell, as it can from Kafka's own SCRAM server at once. The
// SCRAM conversation itself is github.com/xdg-go/scram's.
package sasl
