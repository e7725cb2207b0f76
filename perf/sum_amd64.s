#include "textflag.h"

// func sumAVX2(p *float32, n int) float32
// Sums n float32 values (n a multiple of 32) with four 8-wide accumulators: a streaming read
// that issues 128 bytes of loads per iteration.
TEXT ·sumAVX2(SB), NOSPLIT, $0-20
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ   $5, CX
	JZ     done

loop:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	DECQ   CX
	JNZ    loop

done:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+16(FP)
	RET

// func sum4AVX2(p *float32, stride int, n int) float32
// Sums four streams of n float32 values each (n a multiple of 16), stream j at p + j·stride
// bytes, side by side: 64 bytes of each stream per iteration into two accumulators per stream.
TEXT ·sum4AVX2(SB), NOSPLIT, $0-28
	MOVQ   p+0(FP), SI
	MOVQ   stride+8(FP), BX
	MOVQ   n+16(FP), CX
	LEAQ   (BX)(BX*2), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SHRQ   $4, CX
	JZ     done4

loop4:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS (SI)(BX*1), Y2, Y2
	VADDPS 32(SI)(BX*1), Y3, Y3
	VADDPS (SI)(BX*2), Y4, Y4
	VADDPS 32(SI)(BX*2), Y5, Y5
	VADDPS (SI)(R8*1), Y6, Y6
	VADDPS 32(SI)(R8*1), Y7, Y7
	ADDQ   $64, SI
	DECQ   CX
	JNZ    loop4

done4:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VADDPS       Y2, Y0, Y0
	VADDPS       Y6, Y4, Y4
	VADDPS       Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func sum8AVX2(p *float32, stride int, n int) float32
// Sums eight streams of n float32 values each (n a multiple of 8), stream j at p + j·stride
// bytes, side by side: 32 bytes of each stream per iteration, one accumulator per stream.
// On the Sapphire Rapids VM one core streams ~12 GB/s this way against ~10.8 for four streams
// and ~8.3 for one.
TEXT ·sum8AVX2(SB), NOSPLIT, $0-28
	MOVQ   p+0(FP), SI
	MOVQ   stride+8(FP), BX
	MOVQ   n+16(FP), CX
	LEAQ   (BX)(BX*2), R8
	LEAQ   (SI)(BX*4), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SHRQ   $3, CX
	JZ     done8

loop8:
	VADDPS (SI), Y0, Y0
	VADDPS (SI)(BX*1), Y1, Y1
	VADDPS (SI)(BX*2), Y2, Y2
	VADDPS (SI)(R8*1), Y3, Y3
	VADDPS (DI), Y4, Y4
	VADDPS (DI)(BX*1), Y5, Y5
	VADDPS (DI)(BX*2), Y6, Y6
	VADDPS (DI)(R8*1), Y7, Y7
	ADDQ   $32, SI
	ADDQ   $32, DI
	DECQ   CX
	JNZ    loop8

done8:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VADDPS       Y2, Y0, Y0
	VADDPS       Y6, Y4, Y4
	VADDPS       Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET
