package embed

import (
	"container/list"
	"sync"
)

// lru is the query cache: query text → normalised vector, the least
// recently used dropped beyond its size.
type lru struct {
	size int
	mu   sync.Mutex
	m    map[string]*list.Element
	l    list.List // of *lruItem, most recent first
}

type lruItem struct {
	key string
	vec []float32
}

// newLRU returns a cache of size entries; size 0 or below caches nothing.
func newLRU(size int) *lru {
	return &lru{size: size, m: map[string]*list.Element{}}
}

func (c *lru) get(key string) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return nil, false
	}
	c.l.MoveToFront(el)
	return el.Value.(*lruItem).vec, true
}

func (c *lru) put(key string, vec []float32) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok {
		el.Value.(*lruItem).vec = vec
		c.l.MoveToFront(el)
		return
	}
	c.m[key] = c.l.PushFront(&lruItem{key: key, vec: vec})
	for c.l.Len() > c.size {
		it := c.l.Remove(c.l.Back()).(*lruItem)
		delete(c.m, it.key)
	}
}
