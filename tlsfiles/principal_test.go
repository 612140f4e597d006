package tlsfiles

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"
)

var (
	oidCountry      = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidUnit         = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidDomain       = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidUserID       = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	oidEmail        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	oidTitle        = asn1.ObjectIdentifier{2, 5, 4, 12}
)

// principalCases are subjects and the principal Kafka gives a certificate
// with each. Every expected name was checked against Java 17's
// X500Principal.getName() on the same certificates.
var principalCases = []struct {
	name    string
	subject pkix.Name
	raw     pkix.RDNSequence // when set, the subject as encoded, instead of subject
	want    string
}{
	{"cn only", pkix.Name{CommonName: "alice"}, nil, "User:CN=alice"},
	{"cn ou o c", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}, Country: []string{"US"}}, nil,
		"User:CN=alice,OU=eng,O=acme,C=US"},
	{"locality province street", pkix.Name{CommonName: "broker-1", Locality: []string{"Paris"}, Province: []string{"IDF"}, StreetAddress: []string{"1 rue"}, Country: []string{"FR"}}, nil,
		"User:CN=broker-1,STREET=1 rue,L=Paris,ST=IDF,C=FR"},
	// crypto/x509 puts a pkix.Name's OUs in one RDN.
	{"two OUs", pkix.Name{CommonName: "bob", OrganizationalUnit: []string{"eng", "ops"}}, nil, "User:CN=bob,OU=eng+OU=ops"},
	{"two OU RDNs", pkix.Name{}, pkix.RDNSequence{
		{{Type: oidUnit, Value: "eng"}},
		{{Type: oidUnit, Value: "ops"}},
		{{Type: oidCommonName, Value: "bob"}},
	}, "User:CN=bob,OU=ops,OU=eng"},
	{"escaped characters", pkix.Name{CommonName: `a,b=c+d<e>f#g;h"i\j`}, nil, `User:CN=a\,b\=c\+d\<e\>f\#g\;h\"i\\j`},
	{"leading and trailing spaces", pkix.Name{CommonName: "  carol "}, nil, `User:CN=\ \ carol\ `},
	{"leading hash", pkix.Name{CommonName: "#1"}, nil, `User:CN=\#1`},
	{"non-ASCII", pkix.Name{CommonName: "zoë", Organization: []string{"Ünïcode"}}, nil, "User:CN=zoë,O=Ünïcode"},
	{"serial number is an OID", pkix.Name{CommonName: "dave", SerialNumber: "42"}, nil, "User:2.5.4.5=#13023432,CN=dave"},
	{"postal code is an OID", pkix.Name{CommonName: "erin", PostalCode: []string{"75001"}}, nil, "User:CN=erin,2.5.4.17=#13053735303031"},
	{"DC and UID", pkix.Name{}, pkix.RDNSequence{
		{{Type: oidDomain, Value: "com"}},
		{{Type: oidDomain, Value: "example"}},
		{{Type: oidUserID, Value: "frank"}},
	}, "User:UID=frank,DC=example,DC=com"},
	{"email and title are OIDs", pkix.Name{}, pkix.RDNSequence{
		{{Type: oidCommonName, Value: "grace"}},
		{{Type: oidEmail, Value: "grace@acme.com"}},
		{{Type: oidTitle, Value: "SRE"}},
	}, "User:2.5.4.12=#1303535245,1.2.840.113549.1.9.1=#0c0e67726163654061636d652e636f6d,CN=grace"},
	{"multi-valued RDN", pkix.Name{}, pkix.RDNSequence{
		{{Type: oidCountry, Value: "US"}},
		{{Type: oidOrganization, Value: "acme"}, {Type: oidUnit, Value: "eng"}},
		{{Type: oidCommonName, Value: "heidi"}},
	}, "User:CN=heidi,OU=eng+O=acme,C=US"},
	{"string types", pkix.Name{}, pkix.RDNSequence{
		{{Type: oidCountry, Value: asn1.RawValue{Tag: asn1.TagNumericString, Bytes: []byte("12")}}},
		{{Type: oidOrganization, Value: asn1.RawValue{Tag: asn1.TagT61String, Bytes: []byte{'c', 'a', 'f', 0xe9}}}},
		{{Type: oidUnit, Value: asn1.RawValue{Tag: asn1.TagBMPString, Bytes: []byte{0, 'b', 0, 'm', 0x01, 0x7e}}}},
		{{Type: oidCommonName, Value: asn1.RawValue{Tag: asn1.TagIA5String, Bytes: []byte("ivan@x")}}},
	}, "User:CN=ivan@x,OU=\\00b\\00m\x01~,O=caf\uFFFD,C=#12023132"},
	{"empty subject", pkix.Name{}, pkix.RDNSequence{}, "User:"},
}

// TestPrincipal checks Kafka's default principal of a verified certificate
// for each subject form, and User:ANONYMOUS without one.
func TestPrincipal(t *testing.T) {
	t.Parallel()
	for _, c := range principalCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cert := certificateWithSubject(t, c.subject, c.raw)
			got := Principal(tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}})
			if got != c.want {
				t.Errorf("Principal = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		if got := Principal(tls.ConnectionState{}); got != "User:ANONYMOUS" {
			t.Errorf("Principal without a certificate = %q, want User:ANONYMOUS", got)
		}
	})
	t.Run("unverified", func(t *testing.T) {
		t.Parallel()
		cert := certificateWithSubject(t, pkix.Name{CommonName: "mallory"}, nil)
		if got := Principal(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}); got != AnonymousPrincipal {
			t.Errorf("Principal of an unverified certificate = %q, want %s", got, AnonymousPrincipal)
		}
	})
}

// certificateWithSubject is a certificate with subject, or with raw as its
// encoded subject when raw is not nil, signed by a throwaway issuer (Java
// refuses a self-signed certificate with an empty name).
func certificateWithSubject(t testing.TB, subject pkix.Name, raw pkix.RDNSequence) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	if raw != nil {
		if template.RawSubject, err = asn1.Marshal(raw); err != nil {
			t.Fatal(err)
		}
	}
	issuer := &x509.Certificate{Subject: pkix.Name{CommonName: "issuer"}}
	der, err := x509.CreateCertificate(rand.Reader, template, issuer, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// FuzzDistinguishedName checks that printing any encoded name never panics.
func FuzzDistinguishedName(f *testing.F) {
	for _, c := range principalCases {
		if c.raw != nil {
			raw, err := asn1.Marshal(c.raw)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		distinguishedName(raw)
	})
}
