package scorecard

import "time"

// rankP is the exact one-sided p-value of the Mann-Whitney U test that
// the times of b are smaller than those of t (t slower): the share of
// the ways to split the pooled times into two sides of these sizes
// whose U is at least the one seen. A tie counts as half a pair, and U
// is rounded down: ties favour no flag.
func rankP(b, t []time.Duration) float64 {
	b, t = b[:min(len(b), maxRankRuns)], t[:min(len(t), maxRankRuns)]
	pairs2 := 0 // 2U
	for _, x := range t {
		for _, y := range b {
			switch {
			case x > y:
				pairs2 += 2
			case x == y:
				pairs2++
			}
		}
	}
	u := pairs2 / 2
	counts := uCounts(len(b), len(t))
	total, atLeast := 0.0, 0.0
	for k, c := range counts {
		total += c
		if k >= u {
			atLeast += c
		}
	}
	return atLeast / total
}

// uCounts is how many of the ways to order m values of one side and n of
// the other give each U (0 to m*n): the coefficients of the Gaussian
// binomial [m+n choose m], built up one value at a time. Sides of more
// than maxRankRuns runs are cut to their first maxRankRuns (the table
// grows as m*n squared).
func uCounts(m, n int) []float64 {
	m, n = min(m, maxRankRuns), min(n, maxRankRuns)
	// prev[j] and cur[j] are the counts for i and j values.
	prev := make([][]float64, n+1)
	for j := range prev {
		prev[j] = []float64{1}
	}
	for i := 1; i <= m; i++ {
		cur := make([][]float64, n+1)
		cur[0] = []float64{1}
		for j := 1; j <= n; j++ {
			// The largest value is of the first side (it beats the j
			// values of the second: U grows by j) or of the second.
			c := make([]float64, i*j+1)
			for k, v := range prev[j] {
				c[k+j] += v
			}
			for k, v := range cur[j-1] {
				c[k] += v
			}
			cur[j] = c
		}
		prev = cur
	}
	return prev[n]
}

// maxRankRuns bounds a side in the exact test.
const maxRankRuns = 60
