package tlsfiles

import (
	"crypto/tls"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"
)

// AnonymousPrincipal is the principal of a connection without a verified
// client certificate.
const AnonymousPrincipal = "User:ANONYMOUS"

// Principal is Kafka's default SSL principal of a verified peer certificate:
// "User:" + the subject's distinguished name in RFC 2253 order as Kafka
// prints it, e.g. "User:CN=alice,OU=eng,O=acme" (ssl.principal.mapping.rules
// DEFAULT). It returns "User:ANONYMOUS" when there is no verified certificate.
//
// Kafka prints the name with Java's X500Principal.getName(): the RDNs last
// to first, joined by ","; the attributes of a multi-valued RDN in their
// encoded order, joined by "+"; the keywords CN, C, L, ST, O, OU, STREET,
// DC and UID, and any other attribute (SERIALNUMBER, emailAddress) as its
// dotted OID and "#" plus the hex of its DER value; in a value, each of
// , = + < > # ; " \ and any leading or trailing space escaped with a
// backslash, NUL as \00, and a value's bytes read as UTF-8 whatever its
// string type. Go's pkix.Name.String agrees on the order but not on the
// keywords, the hex or the escaping, so ACLs written for Kafka would not
// match it.
func Principal(state tls.ConnectionState) string {
	if len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return AnonymousPrincipal
	}
	leaf := state.VerifiedChains[0][0]
	dn, err := distinguishedName(leaf.RawSubject)
	if err != nil {
		// crypto/x509 parsed this name; encoding/asn1 is not expected to
		// refuse it, but if it does the name is still worth a principal.
		dn = leaf.Subject.String()
	}
	return "User:" + dn
}

// attribute is one AttributeTypeAndValue, its value kept as encoded.
type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// relativeNameSET is one RDN; encoding/asn1 reads a slice type whose name
// ends in SET as a SET OF.
type relativeNameSET []attribute

// rfc2253Keywords are the attribute keywords Java prints in RFC 2253 form;
// every other attribute is printed as its OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
}

// distinguishedName prints the DER-encoded Name raw as Java's
// X500Principal.getName() does (see Principal).
func distinguishedName(raw []byte) (string, error) {
	var rdns []relativeNameSET
	rest, err := asn1.Unmarshal(raw, &rdns)
	if err != nil {
		return "", err
	}
	if len(rest) > 0 {
		return "", errors.New("tlsfiles: trailing bytes after the distinguished name")
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, a := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, a)
		}
	}
	return b.String(), nil
}

// writeAttribute writes one attribute as keyword=value, or oid=#hex.
func writeAttribute(b *strings.Builder, a attribute) {
	oid := a.Type.String()
	keyword, known := rfc2253Keywords[oid]
	value, isString := derString(a.Value)
	if !known {
		keyword = oid
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	if !known || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	writeEscaped(b, value)
}

// derString is the text of a value of one of the string types Java prints
// as text (PrintableString, T61String, IA5String, GeneralString, BMPString,
// UTF8String). Java reads the bytes of each as UTF-8, whatever the type,
// so a T61String's Latin-1 or a BMPString's UTF-16 prints as Kafka shows
// it: each byte that is not UTF-8 as U+FFFD, and a NUL escaped.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return "", false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String, asn1.TagGeneralString, asn1.TagBMPString, asn1.TagUTF8String:
	default:
		return "", false
	}
	if utf8.Valid(v.Bytes) {
		return string(v.Bytes), true
	}
	r := make([]rune, 0, len(v.Bytes))
	for b := v.Bytes; len(b) > 0; {
		c, n := utf8.DecodeRune(b)
		r = append(r, c)
		b = b[n:]
	}
	return string(r), true
}

// rfc2253Escaped are the characters Java escapes anywhere in a value.
const rfc2253Escaped = ",=+<>#;\"\\"

// writeEscaped writes value escaped as Java's RFC 2253 form escapes it:
// the characters in rfc2253Escaped and leading and trailing spaces (and
// carriage returns) with a backslash, NUL as \00.
func writeEscaped(b *strings.Builder, value string) {
	r := []rune(value)
	lead, trail := 0, len(r)-1
	for lead < len(r) && (r[lead] == ' ' || r[lead] == '\r') {
		lead++
	}
	for trail >= 0 && (r[trail] == ' ' || r[trail] == '\r') {
		trail--
	}
	for i, c := range r {
		switch {
		case i < lead || i > trail, strings.ContainsRune(rfc2253Escaped, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(c)
		}
	}
}
