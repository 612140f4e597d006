package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// netLab is a small network of Linux network namespaces: one bridge in the
// test's namespace (the test and its clients use its address) and one
// namespace per host, each joined to the bridge by a veth pair. A host can
// be cut off (its veth taken off the bridge: nothing crosses, in either
// direction, while everything inside its namespace keeps working) and
// joined again. It needs root and iproute2; without them the test is
// skipped, saying so.
type netLab struct {
	t      *testing.T
	prefix string // names of namespaces and links start with it
	subnet string // the first three octets, "10.x.y"
	hosts  int
}

// newNetLab builds hosts namespaces on one bridge; cleanup removes them
// (after the servers inside have stopped, when it is made before them).
func newNetLab(t *testing.T, hosts int) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root: run the tests as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network namespaces need iproute2's ip: apt-get install iproute2")
	}
	id := os.Getpid() % 10000
	lab := &netLab{t: t, prefix: fmt.Sprintf("st%d", id), subnet: fmt.Sprintf("10.%d.%d", 100+id/250%100, id%250), hosts: hosts}
	t.Cleanup(lab.remove)
	bridge := lab.prefix + "b"
	if err := lab.ip("link", "add", bridge, "type", "bridge"); err != nil {
		t.Skipf("cannot make network namespaces here (%v): the network partition test needs them", err)
	}
	lab.must("addr", "add", lab.subnet+".254/24", "dev", bridge)
	lab.must("link", "set", bridge, "up")
	for i := 1; i <= hosts; i++ {
		ns, outer, inner := lab.names(i)
		lab.must("netns", "add", ns)
		lab.must("link", "add", outer, "type", "veth", "peer", "name", inner)
		lab.must("link", "set", inner, "netns", ns)
		lab.must("link", "set", outer, "master", bridge)
		lab.must("link", "set", outer, "up")
		lab.must("-n", ns, "addr", "add", lab.host(i)+"/24", "dev", inner)
		lab.must("-n", ns, "link", "set", inner, "up")
		lab.must("-n", ns, "link", "set", "lo", "up")
	}
	return lab
}

// names are host i's namespace and its veth ends, outside and inside.
func (l *netLab) names(i int) (ns, outer, inner string) {
	return fmt.Sprintf("%sn%d", l.prefix, i), fmt.Sprintf("%so%d", l.prefix, i), fmt.Sprintf("%si%d", l.prefix, i)
}

// host is host i's address.
func (l *netLab) host(i int) string { return fmt.Sprintf("%s.%d", l.subnet, i) }

// exec is the command prefix that runs a program in host i's namespace.
func (l *netLab) exec(i int) []string {
	ns, _, _ := l.names(i)
	return []string{"ip", "netns", "exec", ns}
}

// cut takes host i off the bridge; join puts it back.
func (l *netLab) cut(i int) {
	_, outer, _ := l.names(i)
	l.must("link", "set", outer, "nomaster")
}

func (l *netLab) join(i int) {
	_, outer, _ := l.names(i)
	l.must("link", "set", outer, "master", l.prefix+"b")
}

func (l *netLab) ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (l *netLab) must(args ...string) {
	l.t.Helper()
	if err := l.ip(args...); err != nil {
		l.t.Fatal(err)
	}
}

// remove deletes the namespaces (and with them the inner veth ends, which
// take the outer ones along) and the bridge, whatever was made.
func (l *netLab) remove() {
	for i := 1; i <= l.hosts; i++ {
		ns, _, _ := l.names(i)
		l.ip("netns", "del", ns)
	}
	l.ip("link", "del", l.prefix+"b")
}
