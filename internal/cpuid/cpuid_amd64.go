package cpuid

// CPUID executes the CPUID instruction for leaf eax, sub-leaf ecx.
func CPUID(eax, ecx uint32) (a, b, c, d uint32)

// XGETBV returns the low half of extended control register 0 (the OS-saved state
// components).
func XGETBV() uint32

func vendor() string {
	_, b, c, d := CPUID(0, 0)
	var s [12]byte
	for i, r := range [3]uint32{b, d, c} {
		for j := range 4 {
			s[4*i+j] = byte(r >> (8 * j))
		}
	}
	return string(s[:])
}
