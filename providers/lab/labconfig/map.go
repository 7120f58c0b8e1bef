package labconfig

import (
	"maps"
	"sync"
)

// Map is a map by string key that one goroutine writes and others read
// (the node simulator's views by VM name, the lab's clusters by key).
type Map[V any] struct {
	mu sync.RWMutex
	m  map[string]V
}

// NewMap is an empty Map.
func NewMap[V any]() *Map[V] { return &Map[V]{m: map[string]V{}} }

// Get is the value of key, and whether there is one.
func (l *Map[V]) Get(key string) (V, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	v, ok := l.m[key]
	return v, ok
}

// All is a copy of the map.
func (l *Map[V]) All() map[string]V {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return maps.Clone(l.m)
}

// Set sets key's value.
func (l *Map[V]) Set(key string, v V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[key] = v
}

// Remove removes key.
func (l *Map[V]) Remove(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}
