package sasl

import (
	"testing"
)

// FuzzExchange feeds arbitrary client tokens to every mechanism: no token
// may crash an exchange or authenticate without the password.
func FuzzExchange(f *testing.F) {
	f.Add(0, []byte("\x00alice\x00alice-secret"), []byte(nil))
	f.Add(1, []byte("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawL,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add(2, []byte("n,a=bob,n=alice,r=x,ext=1"), []byte("c=,r=,p="))
	f.Add(1, []byte("y,,n=al=2Cice,r=abc"), []byte("c=eSws,r=abc,p=AA=="))
	creds := newUsers(f, map[string]string{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, mechanism int, first, second []byte) {
		m := Mechanisms[uint(mechanism)%uint(len(Mechanisms))]
		e, err := Start(m, creds)
		if err != nil {
			t.Fatal(err)
		}
		for _, token := range [][]byte{first, second} {
			if e.Done() {
				break
			}
			if _, err := e.Step(token); err != nil {
				if e.User() != "" {
					t.Fatalf("failed exchange named user %q", e.User())
				}
				return
			}
		}
		if e.Done() && e.User() != "" && m != Plain {
			t.Fatalf("SCRAM authenticated %q from two made-up tokens", e.User())
		}
		if m == Plain && e.User() != "" && string(first) != "\x00alice\x00alice-secret" && string(first) != "alice\x00alice\x00alice-secret" {
			t.Fatalf("PLAIN authenticated %q with %q", e.User(), first)
		}
	})
}
