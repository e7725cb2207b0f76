// Process groups on Linux: a child started with SysProcAttr leads its own process group (so a
// terminal's Ctrl-C reaches only its parent, which decides what the children get) and receives
// SIGKILL when the parent's thread that started it dies (so a crashed or killed parent leaves
// no orphan). Signal reaches the child and everything it started.
package proc

import "syscall"

// SysProcAttr returns the attributes for exec.Cmd.SysProcAttr.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Signal sends sig to the process group led by pid (a child started with SysProcAttr).
func Signal(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}
