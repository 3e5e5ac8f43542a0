package policy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/gpusched/gpusched/model"
)

// Plugin is the base of every extension: a thing with a public name. Each
// extension point is an interface that embeds it (QueueSort, Admit,
// Filter, Policy for placement, Preempt, Round here; the paper
// reproductions' training policies in pollux and gavel), and every
// extension, whatever its point, is added by Register and found by Lookup.
type Plugin interface {
	// Name is the extension's name on the command line and the bus.
	Name() string
}

// Maker is the shape of a point whose extensions are made anew for each
// run (a paper reproduction's policies keep state and draw from the run's
// seed): a named maker of one run's T. Each package declares its own
// instantiation as its point (pollux.Maker, gavel.Maker).
type Maker[T any] interface {
	Plugin
	// New makes the extension for one run, its draws from seed.
	New(seed uint64) T
}

// NewMaker is the Maker named name that makes with make.
func NewMaker[T any](name string, make func(seed uint64) T) Maker[T] {
	return maker[T]{name: name, make: make}
}

type maker[T any] struct {
	name string
	make func(seed uint64) T
}

func (m maker[T]) Name() string      { return m.name }
func (m maker[T]) New(seed uint64) T { return m.make(seed) }

// point is one extension point in the registry: what its extensions are
// called in an error ("queue order"), which of them is listed first (the
// default; "" lists them all sorted), a check an extension must pass to be
// registered there, and the extensions by name.
type point struct {
	kind, first string
	check       func(Plugin) error
	byName      map[string]Plugin
}

// registry is the one registry of extensions, by point (the point's
// interface type) then name. Registration happens in init functions and
// tests may register their own, so it is locked.
var registry = struct {
	sync.RWMutex
	points map[reflect.Type]*point
}{points: map[reflect.Type]*point{}}

// DeclarePoint makes T, an interface embedding Plugin, an extension point:
// kind is what its extensions are called in messages ("queue order"),
// first the name listed first by Names (its default; "" for none), check
// (may be nil) a condition Register enforces. A package that defines a
// point declares it in a package-level variable, so that the point exists
// before any init function registers to it. It panics when T is declared
// twice: a programming error caught at start.
func DeclarePoint[T Plugin](kind, first string, check func(T) error) bool {
	var chk func(Plugin) error
	if check != nil {
		chk = func(p Plugin) error { return check(p.(T)) }
	}
	registry.Lock()
	defer registry.Unlock()
	t := reflect.TypeFor[T]()
	if _, dup := registry.points[t]; dup {
		panic("policy: extension point " + t.String() + " declared twice")
	}
	registry.points[t] = &point{kind: kind, first: first, check: chk, byName: map[string]Plugin{}}
	return true
}

// pointOf is T's point; it panics when T was never declared.
func pointOf[T Plugin]() *point {
	t := reflect.TypeFor[T]()
	p, ok := registry.points[t]
	if !ok {
		panic("policy: " + t.String() + " is not a declared extension point")
	}
	return p
}

// Register adds p at the extension point T under p's name. The one rule
// for every point: a name is registered once, so a duplicate (like an
// empty name, or an extension the point's check refuses) panics — a
// programming error caught at start, never a silent replacement.
func Register[T Plugin](p T) {
	registry.Lock()
	defer registry.Unlock()
	pt := pointOf[T]()
	name := p.Name()
	switch _, dup := pt.byName[name]; {
	case name == "":
		panic(fmt.Sprintf("policy: a %s with no name", pt.kind))
	case dup:
		panic(fmt.Sprintf("policy: duplicate registration of %s %q", pt.kind, name))
	}
	if pt.check != nil {
		if err := pt.check(p); err != nil {
			panic(fmt.Sprintf("policy: %s %q: %v", pt.kind, name, err))
		}
	}
	pt.byName[name] = p
}

// Lookup finds the extension named name at point T, or says which there
// are.
func Lookup[T Plugin](name string) (T, error) {
	registry.RLock()
	defer registry.RUnlock()
	pt := pointOf[T]()
	if p, ok := pt.byName[name]; ok {
		return p.(T), nil
	}
	var zero T
	return zero, fmt.Errorf("unknown %s %q (known: %s)", pt.kind, name, strings.Join(pt.names(), ", "))
}

// Names lists the extensions at point T: its default first, the others
// sorted.
func Names[T Plugin]() []string {
	registry.RLock()
	defer registry.RUnlock()
	return pointOf[T]().names()
}

func (pt *point) names() []string {
	out := make([]string, 0, len(pt.byName))
	for n := range pt.byName {
		if n != pt.first {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	if _, ok := pt.byName[pt.first]; ok {
		out = append([]string{pt.first}, out...)
	}
	return out
}

// Points lists the declared extension points by what their extensions
// are called, sorted ("filter", "placement policy", …), each with its
// extensions' names: what `cluster policies` prints.
func Points() map[string][]string {
	registry.RLock()
	defer registry.RUnlock()
	out := map[string][]string{}
	for _, pt := range registry.points {
		out[pt.kind] = pt.names()
	}
	return out
}

// Code says what kind of no a Status is.
type Code int

const (
	// Wait is a no for now: the job waits and is asked again (an
	// admission that holds a job while its tenant holds too much).
	Wait Code = iota + 1
	// Refuse is a no for good: the job is refused at submission (it asks
	// for more than its tenant may ever have).
	Refuse
)

// Status is an extension's no, the one result type of every point that
// can refuse: which extension, why (in the words a pending job shows), and
// for a refusal the request field at fault. A nil *Status is yes.
type Status struct {
	Code   Code
	Plugin string
	// Field is the submitted field at fault (Refuse only).
	Field  string
	Reason string
}

// Error is the reason, for a Status passed on as an error.
func (s *Status) Error() string { return s.Reason }

// FieldError is a refusal as the submit reply says it: the field at
// fault and the reason.
func (s *Status) FieldError() *model.FieldError {
	return &model.FieldError{Field: s.Field, Message: s.Reason}
}
