// This file implements AnonHuge on Linux: anonymous memory on a 2 MiB boundary marked
// MADV_HUGEPAGE, so that transparent huge pages back it, and HugeBytes and ResidentBytes,
// which read from /proc/self/smaps how much of a mapping huge pages back and how much of it
// is resident.
package mmap

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// AnonHuge returns size bytes of zeroed, writable anonymous memory that starts on a 2 MiB
// boundary and is marked MADV_HUGEPAGE, and a function that unmaps it. With transparent huge
// pages in "always" or "madvise" mode the kernel backs each 2 MiB of it with one huge page
// when the page is first touched (if it can find one); HugeBytes reports how much it did.
func AnonHuge(size int) ([]byte, func() error, error) {
	return anonHuge(size, hugeSize)
}

// AnonHugeExact is AnonHuge whose mapping ends at the first page boundary after size bytes
// instead of the next 2 MiB one: the last, partial 2 MiB of it cannot be a huge page, so once
// every byte was written the mapping's resident size (ResidentBytes) is size rounded up to a
// page, not to 2 MiB. For memory whose resident size is reported.
func AnonHugeExact(size int) ([]byte, func() error, error) {
	return anonHuge(size, uintptr(os.Getpagesize()))
}

func anonHuge(size int, round uintptr) ([]byte, func() error, error) {
	if size <= 0 {
		return nil, nil, fmt.Errorf("mmap: anonymous size %d", size)
	}
	span := (uintptr(size) + round - 1) &^ (round - 1)
	res, err := unix.MmapPtr(-1, 0, nil, span+hugeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: anonymous %d bytes: %w", size, err)
	}
	head := (hugeSize - uintptr(res)%hugeSize) % hugeSize
	aligned := unsafe.Add(res, head)
	if head > 0 {
		_ = unix.MunmapPtr(res, head)
	}
	if tail := hugeSize - head; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(aligned, span), tail)
	}
	b := unsafe.Slice((*byte)(aligned), size)
	_ = unix.Madvise(unsafe.Slice((*byte)(aligned), span), unix.MADV_HUGEPAGE)
	return b, func() error { return unix.MunmapPtr(aligned, span) }, nil
}

// HugeBytes returns how many bytes of the mapping that holds b are backed by transparent huge
// pages (AnonHugePages, or FilePmdMapped for a file mapping, in /proc/self/smaps).
func HugeBytes(b []byte) (int64, error) {
	return smapsSum(b, "AnonHugePages", "FilePmdMapped")
}

// ResidentBytes returns the resident bytes of the mapping that holds b (its Rss in
// /proc/self/smaps): the pages of it this process has mapped in, whether file pages or
// anonymous ones. For a file mapping they are the file's pages the process touched (or the
// kernel mapped in with them) and did not release.
func ResidentBytes(b []byte) (int64, error) {
	return smapsSum(b, "Rss")
}

// smapsSum sums the fields named keys (in kB) of the mapping that holds b in /proc/self/smaps.
func smapsSum(b []byte, keys ...string) (int64, error) {
	if len(b) == 0 {
		return 0, nil
	}
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	var total int64
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := smapsRange(line); ok {
			in = lo <= addr && addr < hi
			continue
		}
		if !in {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains(keys, key) {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("smaps: %q: %w", line, err)
		}
		total += kb << 10
	}
	return total, sc.Err()
}

// smapsRange parses a mapping header line of smaps ("7f00-7f80 r--p ..."), reporting false for
// the field lines.
func smapsRange(line string) (lo, hi uint64, ok bool) {
	r, _, found := strings.Cut(line, " ")
	if !found {
		return 0, 0, false
	}
	a, z, found := strings.Cut(r, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseUint(a, 16, 64)
	hi, err2 := strconv.ParseUint(z, 16, 64)
	return lo, hi, err1 == nil && err2 == nil
}
