package sysmem

import (
	"os"
	"testing"
)

func TestAvailable(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo")
	}
	if a := Available(); a < 64<<20 {
		t.Fatalf("Available() = %d bytes: /proc/meminfo not read", a)
	}
}
