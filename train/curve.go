// This file implements the loss curve: loss.png in the run directory, the training loss of
// every step (thin) with its moving average, and the validation loss at each evaluation.
package train

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
)

// WriteLossCurve draws records into a PNG at path.
func WriteLossCurve(path, title string, records []Record) error {
	var train, val plotter.XYs
	for _, r := range records {
		if r.Loss != nil {
			train = append(train, plotter.XY{X: float64(r.Step), Y: *r.Loss})
		}
		if r.ValLoss != nil {
			val = append(val, plotter.XY{X: float64(r.Step), Y: *r.ValLoss})
		}
	}
	if len(train) == 0 && len(val) == 0 {
		return fmt.Errorf("train: loss curve: no records")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = "cross-entropy loss (nats/token)"
	p.Add(plotter.NewGrid())
	if len(train) > 0 {
		raw, err := plotter.NewLine(train)
		if err != nil {
			return err
		}
		raw.Color = plotutil.Color(0)
		raw.Width = vg.Points(0.4)
		p.Add(raw)
		p.Legend.Add("train", raw)
		win := max(1, len(train)/50)
		avg := make(plotter.XYs, len(train))
		var sum float64
		for i := range train {
			sum += train[i].Y
			if i >= win {
				sum -= train[i-win].Y
			}
			avg[i] = plotter.XY{X: train[i].X, Y: sum / float64(min(i+1, win))}
		}
		sm, err := plotter.NewLine(avg)
		if err != nil {
			return err
		}
		sm.Color = plotutil.Color(0)
		sm.Width = vg.Points(1.8)
		p.Add(sm)
		p.Legend.Add(fmt.Sprintf("train (mean of %d steps)", win), sm)
	}
	if len(val) > 0 {
		l, pts, err := plotter.NewLinePoints(val)
		if err != nil {
			return err
		}
		l.Color, pts.Color = plotutil.Color(1), plotutil.Color(1)
		l.Width = vg.Points(1.8)
		p.Add(l, pts)
		p.Legend.Add("validation", l, pts)
	}
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error { _, err := wt.WriteTo(w); return err })
}
