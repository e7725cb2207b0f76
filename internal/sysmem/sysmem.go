// Package sysmem reads how much memory the machine has available, for the choices that size
// themselves by it (the default KV-cache budget, whether to keep packed weight copies).
package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Available is the machine's available memory in bytes from /proc/meminfo (MemAvailable,
// else MemTotal; 0 if unknown).
func Available() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	var total int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil || kb <= 0 {
			continue
		}
		switch fs[0] {
		case "MemAvailable:":
			return kb << 10
		case "MemTotal:":
			total = kb << 10
		}
	}
	return total
}
