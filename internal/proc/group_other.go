//go:build !linux

// Process control where Linux's process groups and parent-death signal are not used: signals
// go to the child's process only.
package proc

import (
	"os"
	"syscall"
)

// SysProcAttr returns nil: children inherit the parent's process group.
func SysProcAttr() *syscall.SysProcAttr { return nil }

// Signal sends sig to pid.
func Signal(pid int, sig syscall.Signal) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	_ = p.Signal(sig)
}
