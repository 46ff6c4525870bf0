package report

// MaxPoints is the most points a chart plots. A chart is 350 to 600
// pixels wide, so 1,000 points (500 buckets) is about one bucket a pixel;
// 2,000 made the page of a 500-metric run twice as big and slow.
const MaxPoints = 1000

// thin returns x and y as they are when they hold at most maxPoints
// points; otherwise it cuts them into maxPoints/2 buckets of consecutive
// points and keeps each bucket's minimum and maximum, in the order they
// came, placed at the bucket's first and last x. A spike moves by less
// than a bucket (20 steps of 10,000: under a pixel), and the thinned x
// depend on the x alone, so the curves of one run share them (page.go
// writes each x once). x must be sorted.
func thin(x, y []float64, maxPoints int) ([]float64, []float64) {
	n := len(x)
	if n <= maxPoints || maxPoints < 2 {
		return x, y
	}
	buckets := maxPoints / 2
	ox := make([]float64, 0, 2*buckets)
	oy := make([]float64, 0, 2*buckets)
	for b := range buckets {
		lo, hi := b*n/buckets, (b+1)*n/buckets // n > maxPoints: at least two points a bucket
		iMin, iMax := lo, lo
		for i := lo + 1; i < hi; i++ {
			if y[i] < y[iMin] {
				iMin = i
			}
			if y[i] > y[iMax] {
				iMax = i
			}
		}
		first, second := y[iMin], y[iMax]
		if iMax < iMin {
			first, second = second, first
		}
		ox = append(ox, x[lo], x[hi-1])
		oy = append(oy, first, second)
	}
	return ox, oy
}
