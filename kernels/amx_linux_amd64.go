package kernels

import "syscall"

// amxPermit asks Linux for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM with
// XFEATURE_XTILEDATA, Linux 5.16 and later): without it the first tile instruction raises
// SIGILL. The permission is the whole process's; a kernel that refuses it leaves AMX off.
func amxPermit() bool {
	const archReqXcompPerm, xfeatureXTileData = 0x1023, 18
	_, _, errno := syscall.RawSyscall(syscall.SYS_ARCH_PRCTL, archReqXcompPerm, xfeatureXTileData, 0)
	return errno == 0
}
