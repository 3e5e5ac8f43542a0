package policy

// treap is an ordered set of items 0..n-1 (GPU or node indexes of one
// cluster) kept as a randomised balanced tree in flat arrays, with an
// optional aggregate pulled up from each item's children. The order is
// less over keys the owner stores per item: a key must not change while its
// item is in the tree (remove, change, insert again), and less must be a
// strict total order (the item index breaks ties).
type treap struct {
	left, right []int32
	prio        []uint32
	in          []bool
	root        int32
	less        func(a, b int32) bool
	// pull recomputes item i's aggregate from its own key and its
	// children's aggregates (nil: no aggregate).
	pull func(i int32)
}

// none is the empty subtree.
const none = int32(-1)

func newTreap(n int, less func(a, b int32) bool, pull func(int32)) treap {
	t := treap{left: make([]int32, n), right: make([]int32, n), prio: make([]uint32, n), in: make([]bool, n),
		root: none, less: less, pull: pull}
	for i := range t.prio {
		t.prio[i] = mix32(uint32(i))
	}
	return t
}

// mix32 is a fixed integer hash (lowbias32): item priorities are
// deterministic, so a tree's shape, and its cost, replay exactly.
func mix32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

func (t *treap) up(i int32) {
	if t.pull != nil {
		t.pull(i)
	}
}

// insert adds item i (not in the tree) at its key's place.
func (t *treap) insert(i int32) {
	t.left[i], t.right[i] = none, none
	t.in[i] = true
	t.root = t.insertAt(t.root, i)
}

func (t *treap) insertAt(root, i int32) int32 {
	if root == none {
		t.up(i)
		return i
	}
	if t.prio[i] > t.prio[root] {
		t.left[i], t.right[i] = t.split(root, i)
		t.up(i)
		return i
	}
	if t.less(i, root) {
		t.left[root] = t.insertAt(t.left[root], i)
	} else {
		t.right[root] = t.insertAt(t.right[root], i)
	}
	t.up(root)
	return root
}

// split cuts the subtree at root into the items before i and those after.
func (t *treap) split(root, i int32) (int32, int32) {
	if root == none {
		return none, none
	}
	if t.less(root, i) {
		l, r := t.split(t.right[root], i)
		t.right[root] = l
		t.up(root)
		return root, r
	}
	l, r := t.split(t.left[root], i)
	t.left[root] = r
	t.up(root)
	return l, root
}

// merge joins two subtrees whose items in a all come before those in b.
func (t *treap) merge(a, b int32) int32 {
	if a == none {
		return b
	}
	if b == none {
		return a
	}
	if t.prio[a] > t.prio[b] {
		t.right[a] = t.merge(t.right[a], b)
		t.up(a)
		return a
	}
	t.left[b] = t.merge(a, t.left[b])
	t.up(b)
	return b
}

// remove takes item i out of the tree, if it is in.
func (t *treap) remove(i int32) {
	if !t.in[i] {
		return
	}
	t.in[i] = false
	t.root = t.removeAt(t.root, i)
}

func (t *treap) removeAt(root, i int32) int32 {
	if root == i {
		return t.merge(t.left[i], t.right[i])
	}
	if t.less(i, root) {
		t.left[root] = t.removeAt(t.left[root], i)
	} else {
		t.right[root] = t.removeAt(t.right[root], i)
	}
	t.up(root)
	return root
}

// first is the first item in order (none when empty).
func (t *treap) first() int32 {
	x := t.root
	if x == none {
		return none
	}
	for t.left[x] != none {
		x = t.left[x]
	}
	return x
}

// last is the last item in order (none when empty).
func (t *treap) last() int32 {
	x := t.root
	if x == none {
		return none
	}
	for t.right[x] != none {
		x = t.right[x]
	}
	return x
}

// firstWhere is the first item for which after holds, where after is
// false for a prefix of the order and true for the rest (none: no such item).
func (t *treap) firstWhere(after func(int32) bool) int32 {
	found := none
	for x := t.root; x != none; {
		if after(x) {
			found = x
			x = t.left[x]
		} else {
			x = t.right[x]
		}
	}
	return found
}

// next is the item after i in order (none: i is the last).
func (t *treap) next(i int32) int32 {
	return t.firstWhere(func(x int32) bool { return t.less(i, x) })
}
