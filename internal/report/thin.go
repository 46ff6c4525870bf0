package report

// MaxPoints is the most points a chart plots. A chart is a few hundred
// pixels wide, so 2,000 points (1,000 buckets) is more than one a pixel.
const MaxPoints = 2000

// thin returns x and y as they are when they hold at most maxPoints
// points; otherwise it cuts them into maxPoints/2 buckets of consecutive
// points and keeps each bucket's minimum and maximum, in x order (one
// point when they are the same). x must be sorted.
func thin(x, y []float64, maxPoints int) ([]float64, []float64) {
	n := len(x)
	if n <= maxPoints || maxPoints < 2 {
		return x, y
	}
	buckets := maxPoints / 2
	ox := make([]float64, 0, maxPoints)
	oy := make([]float64, 0, maxPoints)
	for b := range buckets {
		lo, hi := b*n/buckets, (b+1)*n/buckets
		iMin, iMax := lo, lo
		for i := lo + 1; i < hi; i++ {
			if y[i] < y[iMin] {
				iMin = i
			}
			if y[i] > y[iMax] {
				iMax = i
			}
		}
		first, second := min(iMin, iMax), max(iMin, iMax)
		ox, oy = append(ox, x[first]), append(oy, y[first])
		if second != first {
			ox, oy = append(ox, x[second]), append(oy, y[second])
		}
	}
	return ox, oy
}
