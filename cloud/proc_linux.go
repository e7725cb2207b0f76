// Process groups on Linux: each replica leads its own group (so a terminal's Ctrl-C reaches
// only the supervisor, which drains the replicas in order) and gets SIGKILL if the supervisor's
// thread that started it dies (so a crashed or killed supervisor leaves no orphan).
package cloud

import "syscall"

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends SIGTERM (or SIGKILL if kill) to the process group led by pid.
func signalGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}
