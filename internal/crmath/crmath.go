// Package crmath computes exp, log and 10^x correctly rounded: the
// float64 nearest the exact value. CPython's math and ** call the C
// library, and glibc's exp, log and pow are almost always correctly
// rounded (of the draws in the 44 Gavel reference runs, two 10^x are an
// ulp off: docs/notes/2026-12-06-gavel.md), while Go's math.Pow and math.Log are off by
// one unit in the last place for a good share of arguments (in two
// Gavel reference runs checked, 37–40 % of the drawn durations, 10^x,
// and 8 % of the inter-arrival times, log). A reproduced simulator that drew its jobs with the C library gets
// the same bits here. Each function evaluates in 128-bit binary floating
// point (math/big) and rounds once, so its result is correctly rounded
// unless the exact value lies within 2^-120 relative of a midpoint
// between two float64s.
package crmath

import (
	"math"
	"math/big"
)

// prec is the working precision in bits: 128 leaves about 70 bits of
// guard beyond float64's 53 after the few roundings of a series.
const prec = 128

// Constants to 50 significant digits, read at the working precision.
var (
	ln2  = mustParse("0.69314718055994530941723212145817656807550013436026")
	ln10 = mustParse("2.3025850929940456840179914546843642076011014886288")
)

// mustParse reads a decimal constant at the working precision.
func mustParse(s string) *big.Float {
	f, _, err := big.ParseFloat(s, 10, prec, big.ToNearestEven)
	if err != nil {
		panic(err)
	}
	return f
}

// newFloat is x at the working precision.
func newFloat(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }

// expBig is e^z at the working precision, for |z| < 1000: z = k·ln2 + r
// with |r| ≤ ln2/2, r halved 16 times so the Taylor series converges in
// a dozen terms, the sum squared back 16 times, and scaled by 2^k.
func expBig(z *big.Float) *big.Float {
	zf, _ := z.Float64()
	k := math.Round(zf / math.Ln2)
	r := new(big.Float).SetPrec(prec).Mul(newFloat(k), ln2)
	r.Sub(z, r)
	const halvings = 16
	r.SetMantExp(r, -halvings)
	sum := newFloat(1)
	term := newFloat(1)
	for n := 1; n < 40; n++ {
		term.Mul(term, r)
		term.Quo(term, newFloat(float64(n)))
		sum.Add(sum, term)
		if term.Sign() == 0 || term.MantExp(nil)-sum.MantExp(nil) < -prec-4 {
			break
		}
	}
	for range halvings {
		sum.Mul(sum, sum)
	}
	return sum.SetMantExp(sum, int(k))
}

// Exp is e^x correctly rounded.
func Exp(x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return math.Exp(x)
	case x > 710:
		return math.Inf(1)
	case x < -746:
		return 0
	}
	f, _ := expBig(newFloat(x)).Float64()
	return f
}

// Pow10 is 10^x correctly rounded (C's pow(10.0, x)).
func Pow10(x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return math.Pow(10, x)
	case x == math.Trunc(x) && math.Abs(x) <= 22:
		return math.Pow10(int(x)) // exact
	case x > 309:
		return math.Inf(1)
	case x < -324:
		return 0
	}
	z := new(big.Float).SetPrec(prec).Mul(newFloat(x), ln10)
	f, _ := expBig(z).Float64()
	return f
}

// Log is the natural logarithm of x correctly rounded: math.Log's
// result refined by two Newton steps on e^l = x (l ← l − 1 + x·e^−l),
// each of which doubles its correct bits.
func Log(x float64) float64 {
	switch {
	case x == 1:
		return 0
	case !(x > 0) || math.IsInf(x, 1):
		return math.Log(x)
	}
	l := newFloat(math.Log(x))
	bx := newFloat(x)
	one := newFloat(1)
	for range 2 {
		e := expBig(new(big.Float).SetPrec(prec).Neg(l))
		e.Mul(e, bx)
		e.Sub(e, one)
		l.Add(l, e)
	}
	f, _ := l.Float64()
	return f
}
