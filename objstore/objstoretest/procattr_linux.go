package objstoretest

import "syscall"

// childProcAttr kills a started server when the test binary dies without
// stopping it (a -timeout panic, a kill), so no server outlives its tests.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
