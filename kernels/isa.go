package kernels

import "strings"

// ISA names the instruction sets the kernels chose on this CPU at start-up, for logs and
// reports: "amx-int8" (quantized prefill tiles), "amx-bf16" (training GEMM), "avx512-vnni"
// (quantized kernels), "avx2" (the AVX2 assembly), or "go" (the plain-Go fallbacks only).
// LLMCLOUD_NO_AMX=1 removes the AMX entries, LLMCLOUD_NO_VNNI=1 the VNNI one (and with it
// AMX-INT8, whose tails run on the VNNI kernels).
func ISA() string {
	var s []string
	if amxOn() {
		s = append(s, "amx-int8")
	}
	if useAMXBF16 {
		s = append(s, "amx-bf16")
	}
	if quantVNNI {
		s = append(s, "avx512-vnni")
	}
	if quantAsm {
		s = append(s, "avx2")
	}
	if len(s) == 0 {
		return "go"
	}
	return strings.Join(s, "+")
}
