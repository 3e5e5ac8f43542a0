package pyrand

import (
	"math"
	"math/bits"
)

// MT19937's parameters (Matsumoto and Nishimura 1998): state size n,
// middle word offset m, and the twist and tempering constants.
const (
	n         = 624
	m         = 397
	matrixA   = 0x9908b0df
	upperMask = 0x80000000
	lowerMask = 0x7fffffff
)

// Rand is one CPython random.Random generator. It is not safe for
// concurrent use.
type Rand struct {
	state [n]uint32
	index int
}

// New is random.Random(seed) for a non-negative integer seed.
func New(seed uint64) *Rand {
	r := &Rand{}
	r.Seed(seed)
	return r
}

// Seed is random.seed(s) for a non-negative integer s: init_by_array over
// s's 32-bit words, least significant first (s = 0 is the key [0]).
func (r *Rand) Seed(s uint64) {
	key := []uint32{uint32(s)}
	if hi := uint32(s >> 32); hi != 0 {
		key = append(key, hi)
	}
	r.initByArray(key)
}

// initGenrand fills the state from one word (the reference's
// init_genrand; 1812433253 is its multiplier).
func (r *Rand) initGenrand(s uint32) {
	r.state[0] = s
	for i := 1; i < n; i++ {
		prev := r.state[i-1]
		r.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	r.index = n
}

// initByArray is the reference's init_by_array: init_genrand(19650218),
// then two mixing passes over the key (1664525 and 1566083941 are its
// multipliers), and the first word forced non-zero.
func (r *Rand) initByArray(key []uint32) {
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(n, len(key))
	for ; k > 0; k-- {
		prev := r.state[i-1]
		r.state[i] = (r.state[i] ^ ((prev ^ (prev >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			r.state[0] = r.state[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = n - 1; k > 0; k-- {
		prev := r.state[i-1]
		r.state[i] = (r.state[i] ^ ((prev ^ (prev >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			r.state[0] = r.state[n-1]
			i = 1
		}
	}
	r.state[0] = 0x80000000
}

// Uint32 is the generator's next 32-bit output (genrand_uint32).
func (r *Rand) Uint32() uint32 {
	if r.index >= n {
		r.twist()
	}
	y := r.state[r.index]
	r.index++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// twist regenerates the whole state.
func (r *Rand) twist() {
	for i := range n {
		y := (r.state[i] & upperMask) | (r.state[(i+1)%n] & lowerMask)
		v := r.state[(i+m)%n] ^ (y >> 1)
		if y&1 != 0 {
			v ^= matrixA
		}
		r.state[i] = v
	}
	r.index = 0
}

// Random is random.random(): 53 random bits from two outputs (27 then
// 26 bits), a·2^26 + b over 2^53, in [0, 1).
func (r *Rand) Random() float64 {
	a := r.Uint32() >> 5
	b := r.Uint32() >> 6
	return (float64(a)*67108864.0 + float64(b)) / 9007199254740992.0
}

// Uniform is random.uniform(lo, hi): lo + (hi−lo)·random().
func (r *Rand) Uniform(lo, hi float64) float64 {
	return lo + (hi-lo)*r.Random()
}

// GetRandBits is random.getrandbits(k) for 0 < k ≤ 32: the top k bits of
// one output.
func (r *Rand) GetRandBits(k int) uint32 {
	return r.Uint32() >> (32 - k)
}

// RandBelow is random._randbelow(n) for 0 < n < 2^32: draws of
// bit_length(n) bits until one is below n (randrange(n), choice).
func (r *Rand) RandBelow(limit int) int {
	k := bits.Len32(uint32(limit))
	for {
		if v := int(r.GetRandBits(k)); v < limit {
			return v
		}
	}
}

// Shuffle is random.shuffle over n items: for i from n−1 down to 1, swap
// i with randbelow(i+1).
func (r *Rand) Shuffle(count int, swap func(i, j int)) {
	for i := count - 1; i > 0; i-- {
		swap(i, r.RandBelow(i+1))
	}
}

// Sample2 is random.sample(population, 2) over a population of size
// count: the two indices drawn, in order.
func (r *Rand) Sample2(count int) [2]int {
	s := r.Sample(count, 2)
	return [2]int{s[0], s[1]}
}

// Sample is random.sample(population, k) over a population of size count
// (0 ≤ k ≤ count): the k indices drawn, in order. CPython keeps a pool
// for small populations and redraws repeats from a set for larger ones;
// the draws differ, so both are copied. "Small" is its setsize: 21 (the
// size of a small set's table), plus 4^⌈log₄(3k)⌉ when k > 5.
func (r *Rand) Sample(count, k int) []int {
	out := make([]int, k)
	setsize := 21
	if k > 5 {
		setsize += int(math.Pow(4, math.Ceil(math.Log(float64(k*3))/math.Log(4))))
	}
	if count <= setsize {
		pool := make([]int, count)
		for i := range pool {
			pool[i] = i
		}
		for i := range k {
			j := r.RandBelow(count - i)
			out[i] = pool[j]
			pool[j] = pool[count-i-1]
		}
		return out
	}
	seen := make(map[int]bool, k)
	for i := range k {
		j := r.RandBelow(count)
		for seen[j] {
			j = r.RandBelow(count)
		}
		seen[j] = true
		out[i] = j
	}
	return out
}
