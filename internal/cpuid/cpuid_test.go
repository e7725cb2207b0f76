package cpuid

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestVendor compares the vendor string with the kernel's /proc/cpuinfo where there is one.
func TestVendor(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		if Vendor != "" {
			t.Fatalf("Vendor = %q off amd64", Vendor)
		}
		return
	}
	if len(Vendor) != 12 {
		t.Fatalf("Vendor = %q, want 12 bytes", Vendor)
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "vendor_id" {
			if got := strings.TrimSpace(v); got != Vendor {
				t.Fatalf("Vendor = %q, /proc/cpuinfo says %q", Vendor, got)
			}
			if IsAMD() == IsIntel() && (Vendor == "AuthenticAMD" || Vendor == "GenuineIntel") {
				t.Fatalf("IsAMD %v, IsIntel %v for %q", IsAMD(), IsIntel(), Vendor)
			}
			return
		}
	}
	t.Skip("no vendor_id in /proc/cpuinfo")
}
