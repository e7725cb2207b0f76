//go:build !linux

// Process control where Linux's process groups and parent-death signal are not used: signals
// go to the replica's process only.
package cloud

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup sends an interrupt (or a kill if kill) to pid.
func signalGroup(pid int, kill bool) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	if kill {
		_ = p.Kill()
		return
	}
	_ = p.Signal(os.Interrupt)
}
