package mmap

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeSize is the x86-64 and arm64 PMD size: one TLB entry maps this much of a huge page.
const hugeSize = 2 << 20

// hugeMin is the smallest file mapped for huge pages; smaller files gain little and a test
// suite opens many of them.
const hugeMin = 64 << 20

// mapFile maps a large file so that the kernel can back it with 2 MiB page-cache folios
// mapped by single page-table entries. Decode streams every weight once per token, and with
// 4 KiB pages it is limited by TLB misses and by the hardware prefetchers stopping at every
// page boundary (TinyLlama F16 decode: 11 tok/s from 4 KiB page-cache folios, 21 from 2 MiB
// ones, on Linux 6.18/ext4).
//
// Three things are needed, and each is harmless where the kernel or file system cannot use it:
// the mapping starts on a 2 MiB boundary (the file offset is 0, so file and address line up),
// the mapping is marked MADV_HUGEPAGE (readahead then allocates PMD-sized folios on file systems
// with large folios, such as ext4 and xfs on recent kernels), and pages of the file cached
// earlier as small folios and mapped by no one are dropped first so that they are read again
// as large ones. LLMCLOUD_HUGEPAGES=0 maps the file plainly.
func mapFile(f *os.File, size int) ([]byte, func() error, error) {
	if size < hugeMin || os.Getenv("LLMCLOUD_HUGEPAGES") == "0" {
		return plainMap(f, size)
	}
	// Reserve an address range with room to align, then map the file over its aligned part.
	page := uintptr(os.Getpagesize())
	span := (uintptr(size) + page - 1) &^ (page - 1)
	res, err := unix.MmapPtr(-1, 0, nil, span+hugeSize, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return plainMap(f, size)
	}
	head := (hugeSize - uintptr(res)%hugeSize) % hugeSize
	aligned := unsafe.Add(res, head)
	_ = unix.Fadvise(int(f.Fd()), 0, int64(size), unix.FADV_DONTNEED)
	addr, err := unix.MmapPtr(int(f.Fd()), 0, aligned, uintptr(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		_ = unix.MunmapPtr(res, span+hugeSize)
		return plainMap(f, size)
	}
	// Give back the reservation's unused head and tail.
	if head > 0 {
		_ = unix.MunmapPtr(res, head)
	}
	if tail := hugeSize - head; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(aligned, span), tail)
	}
	b := unsafe.Slice((*byte)(addr), size)
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, func() error { return unix.MunmapPtr(addr, span) }, nil
}

func plainMap(f *os.File, size int) ([]byte, func() error, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
