package report

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// pageDataOf renders r and reads back the JSON the page draws from.
func pageDataOf(t *testing.T, r *Report) pageData {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(buf.String(), `<script type="application/json" id="report-data">`)
	body, _, _ := strings.Cut(rest, "</script>")
	var data pageData
	if err := json.Unmarshal([]byte(body), &data); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	return data
}

func decodeY(t *testing.T, b64 string) []float32 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func TestCurvesOfTheSameStepsShareOneDeltaCodedXAndCarryTheirYAsFloat32(t *testing.T) {
	n := 5000
	x, a, b := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], a[i], b[i] = float64(i+1), float64(i)*0.5, -float64(i)
	}
	r := &Report{Header: Header{Kind: KindTrain}, Series: []*Series{
		{Name: "loss/a", Axis: AxisStep, X: x, Y: a},
		{Name: "loss/b", Axis: AxisStep, X: x, Y: b},
		{Name: "throughput", Axis: AxisTime, X: []float64{1796400000.25, 1796400003.5}, Y: []float64{1, 2}},
	}}
	data := pageDataOf(t, r)
	if len(data.XS) != 2 || data.Charts[0].XI != data.Charts[1].XI || data.Charts[2].XI == data.Charts[0].XI {
		t.Fatalf("%d x arrays, charts use %d %d %d; want the two step curves to share one", len(data.XS), data.Charts[0].XI, data.Charts[1].XI, data.Charts[2].XI)
	}
	steps := data.XS[data.Charts[0].XI]
	if !steps.DeltaX || len(steps.V) != MaxPoints || steps.V[0] != 1 {
		t.Fatalf("step x: delta %v, %d values, first %v", steps.DeltaX, len(steps.V), steps.V[0])
	}
	sum := 0.0
	for _, d := range steps.V {
		sum += d
	}
	if sum != float64(n) {
		t.Fatalf("the deltas add up to step %v, want the last step %d", sum, n)
	}
	times := data.XS[data.Charts[2].XI]
	if times.DeltaX || times.V[1] != 1796400003.5 {
		t.Fatalf("time x %+v, want wall times as they are", times)
	}
	y := decodeY(t, data.Charts[1].Y)
	if c := data.Charts[1]; c.Points != n || c.Plotted != MaxPoints || len(y) != MaxPoints || y[0] != 0 || y[len(y)-1] != float32(-(n-1)) {
		t.Fatalf("loss/b: %d points, %d plotted, y %d values from %v to %v", c.Points, c.Plotted, len(y), y[0], y[len(y)-1])
	}
}
