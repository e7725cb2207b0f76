package quant

import "math"

func roundEven64(v float64) float64 { return math.RoundToEven(v) }
