package trainerlib

import (
	"math"
	"math/rand/v2"
	"strings"
)

// EnvSlug is the configured environment without its version pin:
// `primeintellect/vf-math@v3` gives `primeintellect/vf-math`.
func EnvSlug(env string) string {
	if i := strings.LastIndex(env, "@"); i > 0 {
		return env[:i]
	}
	return env
}

// EnvShortName is the environment's bare name: `primeintellect/vf-math@v3`
// gives `vf-math`. It labels metrics and tasks.
func EnvShortName(env string) string {
	env = EnvSlug(env)
	if i := strings.LastIndex(env, "/"); i >= 0 {
		env = env[i+1:]
	}
	return env
}

// Filler returns exactly n bytes of words drawn with r, starting with a space
// so it can follow a sentence: the deterministic padding that brings an
// episode to the requested size.
func Filler(r *rand.Rand, words []string, n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteByte(' ')
		b.WriteString(words[r.IntN(len(words))])
	}
	s := b.String()[:n]
	if strings.HasSuffix(s, " ") {
		s = s[:n-1] + "."
	}
	return s
}

// RoundTo rounds x to the given number of decimals, so values read well on a
// dashboard and print in short form.
func RoundTo(x float64, decimals int) float64 {
	scale := math.Pow10(decimals)
	return math.Round(x*scale) / scale
}
