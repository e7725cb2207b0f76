// This file holds the training layers the Qwen families add to Llama's, as forward/backward
// pairs beside train_attention.go's: RoPE on rotate-half pairs (NeoX: (i, i+hd/2), Qwen2 and
// Qwen3), a bias vector added to every row, and the sum over rows that is that bias's
// gradient. Row sums run in row order, so results never depend on goroutine timing.
package kernels

// TrainRopeNeoX rotates, in place, the rotate-half pairs (i, i+hd/2) of every head of x by the
// angle of its row's position (row % T). x is (N, heads*hd), cs is (T, hd): cos, sin
// interleaved per pair i (Rope.Table).
func TrainRopeNeoX(p *Pool, x, cs []float32, N, T, heads, hd int) {
	trainRotateNeoX(p, x, cs, N, T, heads, hd, 1)
}

// TrainRopeNeoXGrad maps, in place, the gradient with respect to TrainRopeNeoX's result to the
// gradient with respect to its input: the rotation by the negative angle.
func TrainRopeNeoXGrad(p *Pool, dx, cs []float32, N, T, heads, hd int) {
	trainRotateNeoX(p, dx, cs, N, T, heads, hd, -1)
}

func trainRotateNeoX(p *Pool, x, cs []float32, N, T, heads, hd int, sign float32) {
	w, half := heads*hd, hd/2
	p.For(N, TrainRowChunk(w), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c := cs[(i%T)*hd : (i%T+1)*hd]
			row := x[i*w : (i+1)*w]
			for h := 0; h < heads; h++ {
				v := row[h*hd : (h+1)*hd]
				for j := 0; j < half; j++ {
					co, si := c[2*j], sign*c[2*j+1]
					x0, x1 := v[j], v[j+half]
					v[j] = x0*co - x1*si
					v[j+half] = x0*si + x1*co
				}
			}
		}
	})
}

// TrainAddBias sets out = x + b for every row: out, x are (N,C), b is (C). out may alias x.
func TrainAddBias(p *Pool, out, x, b []float32, N, C int) {
	p.For(N, TrainRowChunk(C), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o, xi := out[i*C:(i+1)*C], x[i*C:(i+1)*C]
			for j, v := range b[:C] {
				o[j] = xi[j] + v
			}
		}
	})
}

// TrainSumRows adds to db the sum of the N rows of dy, in row order: the gradient of a bias
// added to every row. db is (C), dy is (N,C).
func TrainSumRows(p *Pool, db, dy []float32, N, C int) {
	p.For(C, 64, func(lo, hi int) {
		for i := 0; i < N; i++ {
			r := dy[i*C : (i+1)*C]
			for j := lo; j < hi; j++ {
				db[j] += r[j]
			}
		}
	})
}
