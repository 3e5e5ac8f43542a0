package policy

import (
	"fmt"
	"slices"
	"strings"
)

// extensions holds the extensions of one extension point by name (queue
// orders, preemption rules, rounds): what a `Register…` adds and a
// `Lookup…` finds.
type extensions[T interface{ Name() string }] struct {
	kind string // "queue order", said in the error for an unknown name
	// first is the default, listed first.
	first string
	m     map[string]T
}

func newExtensions[T interface{ Name() string }](kind, first string) *extensions[T] {
	return &extensions[T]{kind: kind, first: first, m: map[string]T{}}
}

func (r *extensions[T]) add(x T) { r.m[x.Name()] = x }

// lookup finds name, or says which names there are.
func (r *extensions[T]) lookup(name string) (T, error) {
	if x, ok := r.m[name]; ok {
		return x, nil
	}
	var zero T
	return zero, fmt.Errorf("unknown %s %q (known: %s)", r.kind, name, strings.Join(r.names(), ", "))
}

// names lists the names, the default first, the others sorted.
func (r *extensions[T]) names() []string {
	var out []string
	for n := range r.m {
		if n != r.first {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	if _, ok := r.m[r.first]; ok {
		out = append([]string{r.first}, out...)
	}
	return out
}
