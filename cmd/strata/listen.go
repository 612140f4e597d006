package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listen opens one of the server's TCP listeners. A failure names the flag
// that gave the address, so the operator knows which of the three ports
// (--listen, --admin-listen, --meta-listen) to change, and how.
func listen(flagName, address string) (net.Listener, error) {
	if err := checkListenAddress(flagName, address); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", address)
	switch {
	case err == nil:
		return ln, nil
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--%s %s: address already in use; another process listens there (is another strata server running? pick another port with --%s)", flagName, address, flagName)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, fmt.Errorf("--%s %s: no interface of this machine has that address (give one of its addresses, or 0.0.0.0 for all, with --%s)", flagName, address, flagName)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("--%s %s: permission denied (ports below 1024 need privileges; pick a higher port with --%s)", flagName, address, flagName)
	}
	return nil, fmt.Errorf("--%s %s: %w (give host:port with --%s)", flagName, address, err, flagName)
}

// checkListenAddress refuses an address listen could not bind for its
// form alone: not host:port, or a port neither a number up to 65535 nor a
// service name. It neither resolves a host name nor asks whether the
// address is this machine's or free: only binding tells that.
func checkListenAddress(flagName, address string) error {
	_, port, err := net.SplitHostPort(address)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return usageError("--%s %s: %v (give host:port with --%s)", flagName, address, err, flagName)
	}
	return nil
}
