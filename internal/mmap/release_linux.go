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

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14; older kernels refuse it, and Populate
// then does nothing).
const madvPopulateRead = 22

// Populate maps the pages under b, a part of a file mapping made by Map, into the process now
// (MADV_POPULATE_READ), reading them into the page cache first where needed, so that later
// reads of them take no page faults. For a table read a few rows at a time (the token
// embedding): on a mapping of 2 MiB folios (mapFile) the first touch of each 2 MiB costs
// 0.1-3 ms (a TinyLlama Q4_0 file fully in the page cache, Linux 6.18: twenty random touches
// of its first 64 MiB 17-20 ms in all; after Populate, which took 19 ms, 0.05-0.1 ms).
func Populate(b []byte) {
	page := os.Getpagesize()
	if len(b) == 0 {
		return
	}
	addr := uintptr(unsafePointer(b))
	lo := addr &^ uintptr(page-1)
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, lo, addr+uintptr(len(b))-lo, madvPopulateRead)
}
