package mmap

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Release tells the kernel that this process no longer needs the pages wholly inside b, a
// part of a file mapping made by Map (MADV_DONTNEED): they leave the process's resident set
// and are read from the file again if touched. b must come from Map: on anonymous memory
// MADV_DONTNEED zeroes the pages.
func Release(b []byte) {
	page := os.Getpagesize()
	if len(b) < page {
		return
	}
	addr := uintptr(unsafePointer(b))
	lo := (addr + uintptr(page) - 1) &^ uintptr(page-1)
	hi := (addr + uintptr(len(b))) &^ uintptr(page-1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(b[lo-addr:hi-addr], unix.MADV_DONTNEED)
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
