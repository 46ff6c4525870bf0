package sharedcomponent

import "sync"

// Map holds the one instance of each key.
type Map[K comparable, V Instance] struct {
	mu         sync.Mutex
	components map[K]*Component[V]
}

// NewMap returns an empty Map.
func NewMap[K comparable, V Instance]() *Map[K, V] {
	return &Map[K, V]{components: map[K]*Component[V]{}}
}

// LoadOrStore returns key's component, making its instance with create
// when the key has none. create gets the status the instance reports
// through, which every host that starts it hears.
func (m *Map[K, V]) LoadOrStore(key K, create func(*Status) (V, error)) (*Component[V], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.components[key]; ok {
		return c, nil
	}
	status := newStatus()
	instance, err := create(status)
	if err != nil {
		return nil, err
	}
	c := &Component[V]{instance: instance, status: status}
	c.remove = func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.components[key] == c {
			delete(m.components, key)
		}
	}
	m.components[key] = c
	return c, nil
}
