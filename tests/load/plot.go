package load

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// targetColors tell the targets apart in the plot.
var targetColors = map[string]color.RGBA{
	TargetNull:        {R: 120, G: 120, B: 120, A: 255},
	TargetTenantguard: {R: 0, G: 110, B: 200, A: 255},
	TargetOPA:         {R: 220, G: 90, B: 20, A: 255},
}

// Plot draws the open-loop latency percentiles (p50 dashed, p99 solid)
// against the offered rate, one colour per target, on a log scale, and
// saves it as a PNG.
func (r *Report) Plot(file string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Validating webhook latency, open-loop (%d tenants, %d pods)", r.Scale.Tenants, r.Scale.Tenants*r.Scale.Namespaces*r.Scale.Pods)
	p.X.Label.Text = "offered rate (requests/s)"
	p.Y.Label.Text = "latency from when due (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for _, target := range []string{TargetNull, TargetTenantguard, TargetOPA} {
		var p50, p99 plotter.XYs
		for _, res := range r.Results {
			if res.Target != target || res.Mode != OpenLoop {
				continue
			}
			p50 = append(p50, plotter.XY{X: res.Rate, Y: max(res.Latency.P50.Seconds()*1000, 0.01)})
			p99 = append(p99, plotter.XY{X: res.Rate, Y: max(res.Latency.P99.Seconds()*1000, 0.01)})
		}
		if len(p99) == 0 {
			continue
		}
		byRate := func(a, b plotter.XY) int { return int(a.X - b.X) }
		slices.SortFunc(p50, byRate)
		slices.SortFunc(p99, byRate)
		for _, series := range []struct {
			name   string
			points plotter.XYs
			dashed bool
		}{{target + " p99", p99, false}, {target + " p50", p50, true}} {
			line, points, err := plotter.NewLinePoints(series.points)
			if err != nil {
				return err
			}
			line.Color, points.Color = targetColors[target], targetColors[target]
			line.Width = vg.Points(1.5)
			points.Shape = draw.CircleGlyph{}
			if series.dashed {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			}
			p.Add(line, points)
			p.Legend.Add(series.name, line)
		}
	}
	return p.Save(9*vg.Inch, 5*vg.Inch, file)
}
