//go:build !linux

package kernels

// amxPermit: only Linux is known to hand out the AMX tile state here, so AMX stays off.
func amxPermit() bool { return false }
