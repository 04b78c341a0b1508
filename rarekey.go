package junction

import (
	"context"
	"sync/atomic"
)

// A rareKey is a context key that most processes never set: a trace
// context without a tracer, a user where no front authenticates, a
// meta-tool's inner call without code mode. Until some context is given
// one, looking one up answers at once; otherwise a miss walks the whole
// chain of contexts (a dozen deep under net/http), and every forwarded
// call asks for each of them.
type rareKey[T any] struct{ set atomic.Bool }

// with returns ctx holding v under k.
func (k *rareKey[T]) with(ctx context.Context, v T) context.Context {
	k.set.Store(true)
	return context.WithValue(ctx, k, v)
}

// of returns the value ctx holds under k, or the zero value.
func (k *rareKey[T]) of(ctx context.Context) (v T) {
	if !k.set.Load() {
		return v
	}
	v, _ = ctx.Value(k).(T)
	return v
}
