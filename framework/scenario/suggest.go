package scenario

import "fmt"

// didYouMean is "; did you mean "x"?" for the candidate nearest to word
// (by edit distance, at most a third of word's length and at least one
// edit), "" when none is near: what an unknown field, fault, probe or
// target name's error ends with.
func didYouMean(word string, candidates []string) string {
	if best := Closest(word, candidates); best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return ""
}

// Closest is the candidate within a third of word's length of edits of
// it (the first in order of a tie), "" when none is or word is one.
func Closest(word string, candidates []string) string {
	best, bestDist := "", len(word)/3+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestDist || (d == bestDist && best != "" && c < best) {
			best, bestDist = c, d
		}
	}
	if best == word {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
