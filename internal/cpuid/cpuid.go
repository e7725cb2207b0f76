// Package cpuid reads the x86 CPUID instruction: the vendor of the CPU, for the few kernel
// choices whose best setting was measured to differ between Intel and AMD cores with the same
// instruction sets, and the raw leaves for feature checks outside golang.org/x/sys/cpu.
package cpuid

// Vendor is the CPU's vendor string from CPUID leaf 0 ("GenuineIntel", "AuthenticAMD"; empty
// off x86-64).
var Vendor = vendor()

// IsAMD reports an AMD CPU.
func IsAMD() bool { return Vendor == "AuthenticAMD" }

// IsIntel reports an Intel CPU.
func IsIntel() bool { return Vendor == "GenuineIntel" }
